"""column_hints: per dataset value hints for the catalog, computed when its rows change

Create Date: 2026-11-23 15:40:00.000000
"""

import sqlalchemy as sa
from alembic import op

from datawell.storage.tables import UTCDateTime

revision: str = "0005_column_hints"
down_revision: str | None = "0004_verified_examples"


def upgrade() -> None:
    # Datasets ingested before this revision get their hints on the catalog's first read.
    op.create_table(
        "column_hints",
        sa.Column("dataset_id", sa.String(length=36), nullable=False),
        sa.Column("hints", sa.JSON(), nullable=False),
        sa.Column("computed_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("dataset_id"),
    )


def downgrade() -> None:
    op.drop_table("column_hints")
