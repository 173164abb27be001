"""uploads.status_changed_at, so an upload left COMPLETING by a dead process can be retaken

Create Date: 2026-11-22 21:20:00.000000
"""

import sqlalchemy as sa
from alembic import op

from datawell.storage.tables import UTCDateTime

revision: str = "0003_upload_status_time"
down_revision: str | None = "0002_link_versions"


def upgrade() -> None:
    with op.batch_alter_table("uploads") as batch_op:
        batch_op.add_column(sa.Column("status_changed_at", UTCDateTime(), nullable=True))
    op.execute("UPDATE uploads SET status_changed_at = created_at")
    with op.batch_alter_table("uploads") as batch_op:
        batch_op.alter_column("status_changed_at", existing_type=UTCDateTime(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("uploads") as batch_op:
        batch_op.drop_column("status_changed_at")
