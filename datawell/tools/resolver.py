"""Table names to datasets: what a query may read, and which names a CTE may not take."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import QueryError, SubError
from datawell.storage.access import Caller, NamespaceRef, find_namespace
from datawell.storage.datasets import DatasetRef, list_datasets
from datawell.storage.tables import Dataset
from datawell.tools.catalog import TableInfo, table_info
from datawell.tools.checker import TableRef, close_matches, did_you_mean


class TableResolver:
    """Table names to datasets: `orders` in the request's namespace, `owner.namespace.orders` in
    any namespace the caller may read (as the caller's access says: nothing is asked again).
    Every unresolved name is one sub_error."""

    def __init__(self, session: AsyncSession, caller: Caller, namespace: NamespaceRef) -> None:
        self.session = session
        self.caller = caller
        self.namespace = namespace
        self.datasets: dict[str, list[DatasetRef]] = {}
        self.resolved: list[DatasetRef] = []  # the datasets `resolve` found, in order

    async def _datasets(self, namespace: NamespaceRef) -> list[DatasetRef]:
        if namespace.id not in self.datasets:
            self.datasets[namespace.id] = await list_datasets(self.session, namespace)
        return self.datasets[namespace.id]

    async def refuse_taken_names(self, ctes: list[str]) -> None:
        """A CTE may not be named like a dataset of the namespace (ignoring case, as SQLite does):
        whether such a name means the CTE or the dataset would depend on the store."""
        names = {d.name.lower(): d.name for d in await self._datasets(self.namespace)}
        problems = [
            SubError("cte_name_taken", f"WITH {cte}: {names[cte.lower()]!r} is a dataset; give the CTE another name")
            for cte in dict.fromkeys(ctes)
            if cte.lower() in names
        ]
        if problems:
            raise QueryError("a CTE is named like a dataset", sub_errors=problems)

    async def resolve(self, references: list[TableRef]) -> dict[TableRef, TableInfo]:
        tables: dict[TableRef, TableInfo] = {}
        problems: list[SubError] = []
        for ref in references:
            try:
                tables[ref] = await self._one(ref)
            except QueryError as exc:
                problems += exc.sub_errors
        if problems:
            raise QueryError("the query names tables that are not datasets you can read", sub_errors=problems)
        return tables

    async def _one(self, ref: TableRef) -> TableInfo:
        if ref.owner is None and ref.namespace is not None:
            hint = await self._elsewhere(ref.name, ref.namespace)
            raise _unknown(
                ref,
                f"name a table as dataset (in namespace {self.namespace}) or owner.namespace.dataset"
                + (f": did you mean {hint}?" if hint else ""),
            )
        namespace = self.namespace
        if (
            ref.owner is not None
            and ref.namespace is not None
            and (ref.owner, ref.namespace)
            != (
                self.namespace.owner,
                self.namespace.name,
            )
        ):
            found = self.caller.readable_named(ref.owner, ref.namespace)
            if found is None:
                if await find_namespace(self.session, ref.owner, ref.namespace) is None:
                    raise _unknown(ref, f"there is no namespace {ref.owner}/{ref.namespace}", "unknown_namespace")
                raise _unknown(
                    ref,
                    f"you have no read access to namespace {ref.owner}/{ref.namespace}: its owner can grant it",
                    "no_read_access",
                )
            namespace = found
        datasets = await self._datasets(namespace)
        exact = [d for d in datasets if d.name == ref.name] or [
            d for d in datasets if d.name.lower() == ref.name.lower()
        ]
        if len(exact) == 1:
            self.resolved.append(exact[0])
            name = (
                exact[0].name
                if namespace.id == self.namespace.id
                else f"{namespace.owner}.{namespace.name}.{exact[0].name}"
            )
            return table_info(exact[0], name)
        names = [d.name for d in datasets]
        suggestion = did_you_mean(ref.name, names)
        if not suggestion and namespace.id == self.namespace.id:
            hint = await self._elsewhere(ref.name)
            suggestion = f": did you mean {hint}?" if hint else ""
        where = "this namespace" if namespace.id == self.namespace.id else f"namespace {namespace}"
        raise _unknown(ref, f"no dataset named {ref.name!r} in {where}{suggestion}")

    async def _elsewhere(self, name: str, namespace_name: str | None = None) -> str:
        """Datasets of that name in other namespaces the caller may read, as owner.namespace.dataset."""
        readable = {n.id: n for n in self.caller.readable if n.id != self.namespace.id}
        if namespace_name is not None:
            readable = {i: n for i, n in readable.items() if n.name.lower() == namespace_name.lower()}
        if not readable:
            return ""
        rows = await self.session.execute(
            select(Dataset.name, Dataset.namespace_id).where(Dataset.namespace_id.in_(list(readable)))
        )
        qualified = [f"{readable[ns].owner}.{readable[ns].name}.{n}" for n, ns in rows]
        matches = [q for q in qualified if q.rsplit(".", 1)[1].lower() == name.lower()]
        matches = matches or [
            q for q in qualified if q.rsplit(".", 1)[1] in close_matches(name, [x.rsplit(".", 1)[1] for x in qualified])
        ]
        return " or ".join(repr(m) for m in matches[:3])


def _unknown(ref: TableRef, message: str, code: str = "unknown_table") -> QueryError:
    return QueryError(message, sub_errors=[SubError(code, f"table {str(ref)!r}: {message}")])
