"""initial schema

Create Date: 2026-11-22 17:49:29.265614
"""

import sqlalchemy as sa
from alembic import op

from datawell.storage.tables import UTCDateTime

revision: str = "0001"
down_revision: str | None = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("username"),
    )
    op.create_table(
        "build_specs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("owner_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("sources", sa.JSON(), nullable=False),
        sa.Column("destination", sa.JSON(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("build_specs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_build_specs_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "namespaces",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("owner_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("owner_id", "name"),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("description", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tokens_user_id"), ["user_id"], unique=False)

    op.create_table(
        "conversations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("namespace_id", sa.String(length=36), nullable=True),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["namespace_id"], ["namespaces.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conversations_user_id"), ["user_id"], unique=False)

    op.create_table(
        "datasets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("namespace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("schema_definition", sa.JSON(), nullable=False),
        sa.Column("field_types", sa.JSON(), nullable=False),
        sa.Column("table_name", sa.String(length=64), nullable=False),
        sa.Column("created_by", sa.String(length=36), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["namespace_id"], ["namespaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("namespace_id", "name"),
        sa.UniqueConstraint("table_name"),
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("namespace_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("permission", sa.String(length=8), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["namespace_id"], ["namespaces.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("namespace_id", "user_id"),
    )
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_grants_user_id"), ["user_id"], unique=False)

    op.create_table(
        "ingestions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("dataset_id", sa.String(length=36), nullable=False),
        sa.Column("object_key", sa.String(length=512), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_message", sa.Text(), nullable=False),
        sa.Column("expected_total_bytes", sa.BigInteger(), nullable=False),
        sa.Column("processed_bytes", sa.BigInteger(), nullable=False),
        sa.Column("processed_rows", sa.BigInteger(), nullable=False),
        sa.Column("original_ingestion_id", sa.String(length=36), nullable=True),
        sa.Column("last_retry_at", UTCDateTime(), nullable=True),
        sa.Column("seen_at", UTCDateTime(), nullable=False),
        sa.Column("mapping", sa.JSON(), nullable=False),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.Column("created_by", sa.String(length=36), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("ingestions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ingestions_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_ingestions_dataset_id"), ["dataset_id"], unique=False)

    op.create_table(
        "links",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("namespace_id", sa.String(length=36), nullable=False),
        sa.Column("origin_dataset_id", sa.String(length=36), nullable=False),
        sa.Column("destination_dataset_id", sa.String(length=36), nullable=False),
        sa.Column("origin", sa.String(length=400), nullable=False),
        sa.Column("destination", sa.String(length=400), nullable=False),
        sa.Column("hits", sa.BigInteger(), nullable=False),
        sa.Column("match_type", sa.String(length=32), nullable=False),
        sa.Column("score", sa.Double(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("curated_by", sa.String(length=36), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["curated_by"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["destination_dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["namespace_id"], ["namespaces.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["origin_dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("origin", "destination"),
    )
    with op.batch_alter_table("links", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_links_destination_dataset_id"), ["destination_dataset_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_links_namespace_id"), ["namespace_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_links_origin_dataset_id"), ["origin_dataset_id"], unique=False)

    op.create_table(
        "uploads",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("dataset_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("filename", sa.String(length=512), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("part_size", sa.BigInteger(), nullable=False),
        sa.Column("part_count", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_by", sa.String(length=36), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
        ),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_uploads_dataset_id"), ["dataset_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_uploads_dataset_id"))

    op.drop_table("uploads")
    with op.batch_alter_table("links", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_links_origin_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_links_namespace_id"))
        batch_op.drop_index(batch_op.f("ix_links_destination_dataset_id"))

    op.drop_table("links")
    with op.batch_alter_table("ingestions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ingestions_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_ingestions_created_at"))

    op.drop_table("ingestions")
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grants_user_id"))

    op.drop_table("grants")
    op.drop_table("datasets")
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversations_user_id"))

    op.drop_table("conversations")
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tokens_user_id"))

    op.drop_table("tokens")
    op.drop_table("namespaces")
    with op.batch_alter_table("build_specs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_build_specs_owner_id"))

    op.drop_table("build_specs")
    op.drop_table("users")
