"""Encode token shards on Ray: ``bytepair.encode_dataset(..., engine="ray")``.

One Ray task per task of inputs (consecutive files of about 64 MiB) runs the
engine-neutral `bytepair.dataset.protocol.encode_task`, which writes that
task's shards and its record straight into the output folder: a retried task
overwrites its own shards only, and ids never pass through the driver or the
object store. The driver writes the manifest last. The cluster rules are those
of counting (`bytepair.counts.engines.on_ray`): the output folder on storage
every node can write, inputs visible to every node or fsspec URLs, and the
bytepair package shipped as the job's ``py_modules`` when joining a cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bytepair.counts.engines.on_ray import start_ray
from bytepair.dataset.protocol import ShardSpec, TaskRun, encode_task

if TYPE_CHECKING:
    from bytepair.tokenizer import Tokenizer


def encode_tasks_on_ray(
    run: TaskRun,
    on_record: Callable[[dict[str, Any]], None],
    *,
    address: str | None = None,
    runtime_env: dict[str, Any] | None = None,
    max_retries: int = 1,
    _fail_once: str | None = None,
) -> dict[int, dict[str, Any]]:
    """Run each task of `run` as a Ray task (one CPU and `run.num_threads`
    threads each, default 1), calling `on_record` as each finishes; returns
    {task: record}. A task that fails for any reason but bad input is retried
    up to `max_retries` times; the retry overwrites that task's shards only.
    `address`, `runtime_env`: as for counting (`start_ray`).

    Raises:
        ImportError: ray is not installed.
        ValueError, OSError: bad input, as the task raised it (names the file).
        ray.exceptions.RayError: a task that still failed after `max_retries`.
    """
    ray, shutdown, runtime_env = start_ray(address, runtime_env)
    options: dict[str, Any] = {"num_cpus": 1, "max_retries": max_retries, "retry_exceptions": True}
    if runtime_env:
        options["runtime_env"] = runtime_env
    pending: dict[Any, int] = {}
    try:
        task_fn = ray.remote(_encode_task_or_error).options(**options)
        tok_ref = ray.put(run.tok)
        pending = {
            task_fn.remote(
                t, paths, run.spec, tok_ref, run.out_dir, run.num_threads or 1, _fail_once
            ): t
            for t, paths in run.todo
        }
        finished: dict[int, dict[str, Any]] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            t = pending.pop(done[0])
            record = ray.get(done[0])
            if isinstance(record, BaseException):
                raise record
            finished[t] = record
            on_record(record)
        return finished
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if shutdown:
            ray.shutdown()


def _encode_task_or_error(
    task: int,
    paths: list[str],
    spec: ShardSpec,
    tok: "Tokenizer",
    out_dir: str,
    num_threads: int,
    fail_once: str | None = None,
) -> dict[str, Any] | BaseException:
    """One Ray task. Bad input (ValueError, OSError) is returned, not raised,
    so Ray does not retry what would fail again and the driver re-raises it.
    `fail_once` (tests): a marker file; the first task to create it fails
    after writing its shards."""
    try:
        record = encode_task(task, paths, spec, tok, out_dir, num_threads)
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
