"""verified examples: question -> query pairs per namespace

Create Date: 2026-11-23 15:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

from datawell.storage.tables import UTCDateTime

revision: str = "0004_verified_examples"
down_revision: str | None = "0003_upload_status_time"


def upgrade() -> None:
    op.create_table(
        "verified_examples",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("namespace_id", sa.String(length=36), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("question_key", sa.String(length=512), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.String(length=36), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["namespace_id"], ["namespaces.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["created_by"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_verified_examples_question", "verified_examples", ["namespace_id", "question_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_verified_examples_question", table_name="verified_examples")
    op.drop_table("verified_examples")
