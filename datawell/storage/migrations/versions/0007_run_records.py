"""run_records: every graph run's record, for the run viewer

Create Date: 2026-11-25 23:50:00.000000
"""

import sqlalchemy as sa
from alembic import op

from datawell.storage.tables import UTCDateTime

revision: str = "0007_run_records"
down_revision: str | None = "0006_agent_runs"


def upgrade() -> None:
    op.create_table(
        "run_records",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("namespace_id", sa.String(length=36), nullable=True),
        sa.Column("graph", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=64), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("question", sa.String(length=200), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["namespace_id"], ["namespaces.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_run_records_user_started", "run_records", ["user_id", "started_at"])
    op.create_index("ix_run_records_namespace_id", "run_records", ["namespace_id"])
    op.create_index("ix_run_records_started_at", "run_records", ["started_at"])


def downgrade() -> None:
    op.drop_table("run_records")
