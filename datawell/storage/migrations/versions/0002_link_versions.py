"""links unique per namespace; link version counters

Create Date: 2026-11-22 19:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0002_link_versions"
down_revision: str | None = "0001"

# 0001 created the unique constraint without a name: PostgreSQL named it itself, SQLite
# keeps it unnamed, and batch mode finds it through this naming convention.
NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("links_origin_destination_key", "links", type_="unique")
        op.create_unique_constraint("uq_links_namespace_link", "links", ["namespace_id", "origin", "destination"])
    else:
        with op.batch_alter_table("links", naming_convention=NAMING) as batch_op:
            batch_op.drop_constraint("uq_links_origin", type_="unique")
            batch_op.create_unique_constraint("uq_links_namespace_link", ["namespace_id", "origin", "destination"])
    op.create_table(
        "link_versions",
        sa.Column("namespace_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["namespace_id"], ["namespaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("namespace_id"),
    )


def downgrade() -> None:
    op.drop_table("link_versions")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("uq_links_namespace_link", "links", type_="unique")
        op.create_unique_constraint("links_origin_destination_key", "links", ["origin", "destination"])
    else:
        with op.batch_alter_table("links") as batch_op:
            batch_op.drop_constraint("uq_links_namespace_link", type_="unique")
            batch_op.create_unique_constraint("uq_links_origin", ["origin", "destination"])
