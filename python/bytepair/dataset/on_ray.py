"""Encode token shards on Ray: ``bytepair.encode_dataset(..., engine="ray")``.

One Ray task per task of inputs (consecutive files of about 64 MiB) runs the
engine-neutral `bytepair.dataset.shards._encode_task`, which writes that
task's shards and its record straight into the output folder: a retried task
overwrites its own shards only, and ids never pass through the driver or the
object store. The driver writes the manifest last. The cluster rules are those
of counting (`bytepair.counts.engines.on_ray`): the output folder on storage
every node can write, inputs visible to every node or fsspec URLs, and the
bytepair package shipped as the job's ``py_modules`` when joining a cluster.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bytepair.counts.engines.on_ray import _import_ray, default_runtime_env
from bytepair.dataset.shards import ShardSpec, _encode_task
from bytepair.progress import ProgressBar

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer


def encode_tasks_on_ray(
    todo: Sequence[int],
    tasks: Sequence[Sequence[str]],
    spec: ShardSpec,
    tok: "Tokenizer",
    out_dir: str,
    bar: ProgressBar,
    done_tokens: int,
    *,
    num_threads: int | None = None,
    address: str | None = None,
    runtime_env: dict[str, Any] | None = None,
    max_retries: int = 1,
    _fail_once: str | None = None,
) -> dict[int, dict[str, Any]]:
    """Run `_encode_task` for each task index in `todo` as a Ray task (one CPU
    and `num_threads` threads each, default 1); returns {task: record}. A
    task that fails for any reason but bad input is retried up to
    `max_retries` times; the retry overwrites that task's shards only.

    Raises:
        ImportError: ray is not installed.
        ValueError, OSError: bad input, as the task raised it (names the file).
        ray.exceptions.RayError: a task that still failed after `max_retries`.
    """
    ray = _import_ray()
    shutdown = not ray.is_initialized()
    if shutdown:
        joining = address is not None or bool(os.environ.get("RAY_ADDRESS"))
        ray.init(address=address, include_dashboard=False, logging_level="WARNING", log_to_driver=False,
                 runtime_env=runtime_env if runtime_env is not None else default_runtime_env() if joining else None)
        runtime_env = None
    options: dict[str, Any] = {"num_cpus": 1, "max_retries": max_retries, "retry_exceptions": True}
    if runtime_env:
        options["runtime_env"] = runtime_env
    pending: dict[Any, int] = {}
    try:
        task_fn = ray.remote(_encode_task_or_error).options(**options)
        tok_ref = ray.put(tok)
        pending = {task_fn.remote(t, list(tasks[t]), spec, tok_ref, out_dir, num_threads or 1, _fail_once): t for t in todo}
        finished: dict[int, dict[str, Any]] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            t = pending.pop(done[0])
            record = ray.get(done[0])
            if isinstance(record, BaseException):
                raise record
            finished[t] = record
            done_tokens += record["tokens"]
            bar.update_to(bar.n + record["bytes"])
            bar.set_postfix(tokens=f"{done_tokens:,}", tasks=f"{len(finished)}/{len(todo)}")
        return finished
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if shutdown:
            ray.shutdown()


def _encode_task_or_error(task: int, paths: list[str], spec: ShardSpec, tok: "Tokenizer", out_dir: str,
                          num_threads: int, fail_once: str | None = None) -> dict[str, Any] | BaseException:
    """One Ray task. Bad input (ValueError, OSError) is returned, not raised,
    so Ray does not retry what would fail again and the driver re-raises it.
    `fail_once` (tests): a marker file; the first task to create it fails
    after writing its shards."""
    try:
        record = _encode_task(task, paths, spec, tok, out_dir, num_threads)
    except (ValueError, OSError) as e:
        return e
    if fail_once is not None:
        try:
            with open(fail_once, "x"):
                pass
        except FileExistsError:
            return record
        raise RuntimeError("injected failure after writing the shards")
    return record
