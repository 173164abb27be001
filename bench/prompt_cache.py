"""How much of each prompt the embedded model's cache serves when namespaces take turns.

Three made-up namespaces (A, B, C) ask in turn, twice round, on two parallel sequences, one
output token each: the prompts have the shape of Datawell's (rules shared by every namespace,
then the namespace's own catalog). Prints each call's prompt tokens and how many came from
llama.cpp's cache; with more namespaces than sequences, a namespace's second call gets its
prefix back only from the host-RAM prompt cache.

    .venv/bin/python -m bench.prompt_cache                      # as Datawell runs it
    .venv/bin/python -m bench.prompt_cache --rules-first --similarity 0.1   # as it ran before

Loads the embedded model (`/tmp/datawell-bench-models`, as bench/load.py); the counts do not
depend on the machine's load, the seconds do. Never run by the test suite."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from datawell.llm import embedded_runtime

RULES = " ".join(
    f"Rule {i}: use only the listed tables and name every column exactly as the catalog does." for i in range(36)
)


def prompt(namespace: str, question: str, rules_first: bool) -> list[dict[str, str]]:
    catalog = " ".join(
        f"table {namespace}_t{i} ({namespace}_a{i} integer, {namespace}_b{i} text, {namespace}_c{i} real)"
        for i in range(25)
    )
    head = "" if rules_first else f"Namespace {namespace}.\n"
    return [
        {"role": "system", "content": f"{head}{RULES}\nCatalog:\n{catalog}"},
        {"role": "user", "content": question},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--similarity", type=float, default=embedded_runtime.SAME_PREFIX_SHARE)
    parser.add_argument("--rules-first", action="store_true", help="no namespace line before the shared rules")
    args = parser.parse_args()
    embedded_runtime.SAME_PREFIX_SHARE = args.similarity  # read when the model loads
    runtime = embedded_runtime.EmbeddedRuntime(
        Path(tempfile.gettempdir()) / "datawell-bench-models", embedded_runtime.RuntimeOptions(parallel=2)
    )
    for turn, namespace in enumerate("ABCABC"):
        request = {"messages": prompt(namespace, f"question {turn}?", args.rules_first), "max_tokens": 1}
        runtime.complete(request | {"temperature": 0})
        call = runtime.calls[-1]
        print(f"{namespace}: {call.prompt_tokens} prompt tokens, {call.cached_tokens} cached, "
              f"prefill {call.prefill_seconds:.1f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
