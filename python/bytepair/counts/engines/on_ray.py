"""Count pre-tokens on Ray: ``bytepair.count(..., engine="ray")``.

Ray Core tasks run the engine-neutral steps of `bytepair.counts.protocol`:
`count_shard` once per group of input files of about equal bytes (each writes
its word counts as hash buckets into the artifact's staging folder), then
`reduce_bucket` once per bucket (sums one bucket of every shard into one sorted
part). Tasks return only small stats, so word counts never pass through the
driver, the object store or ``ray.get``; the driver writes the manifest
(`finish`).

The output folder must be on storage every node can write (a local disk on a
one-machine cluster, NFS or another shared mount on a real one); inputs may be
local paths visible to every node or fsspec URLs (``s3://``, ``gs://``, ...).

When bytepair connects to a cluster (``address=``, ``--ray-address`` or
``RAY_ADDRESS``), it ships itself to the workers as the job's
``runtime_env={"py_modules": [<the bytepair package folder>]}`` unless a
`runtime_env` is given: the workers then need the driver's platform and Python
version, and pyarrow installed (pass ``runtime_env={"py_modules": [...],
"pip": [...]}`` to change that). Ray accepts local folders only at the job
level, so a caller who runs ``ray.init`` first passes
``runtime_env={"py_modules": [bytepair]}`` there if the cluster lacks it. See https://docs.ray.io/en/latest/ray-core/tasks.html
and https://docs.ray.io/en/latest/ray-core/handling-dependencies.html.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

from bytepair.counts.artifact import WordCounts
from bytepair.counts.parts import part_name
from bytepair.counts.protocol import (
    bucket_paths,
    count_shard,
    default_shards,
    finish,
    finished_part,
    finished_shards,
    interrupted,
    plan_shards,
    reduce_bucket,
    run_plan,
    staging_dir,
    sum_pruned,
)
from bytepair.counts.sources import CountSpec, input_size
from bytepair.progress import ProgressBar


def count_on_ray(
    paths: Sequence[str],
    spec: CountSpec,
    out: str,
    *,
    parts: int | None = None,
    num_tasks: int | None = None,
    shards: int | None = None,
    max_memory: int | None = None,
    progress: bool = False,
    address: str | None = None,
    runtime_env: dict[str, Any] | None = None,
    max_retries: int = 1,
    _fail_once: str | None = None,
) -> WordCounts:
    """Count `paths` on Ray into the word-counts artifact `out`
    (called by `bytepair.count` with ``engine="ray"``).

    Args:
        paths: input files or fsspec URLs (already expanded and checked).
        spec: pattern, special tokens, format and decoding policy.
        out: the artifact folder, on storage every node can write.
        parts: Parquet parts (word buckets); default: the cluster's CPUs.
        num_tasks: counting tasks in flight at once; default: as many as Ray
            schedules (one CPU each).
        shards: groups of files, one counting task each; default: the
            cluster's CPUs, and one per GiB of input past that (a file is
            never split).
        max_memory: the budget in bytes of each counting task's counts (lossy
            counting past it) and of each reduce task; None: exact counts.
        progress: a bar of input bytes counted (per finished shard).
        address: the Ray cluster to join (``"auto"``, ``"ray://host:10001"``);
            default: the running one, or a new local one sized to this machine.
        runtime_env: the job's when this call runs ``ray.init`` (default:
            ship the bytepair package when connecting to a cluster), the
            tasks' when Ray is already initialized (URIs only, Ray's rule).
        max_retries: retries of a task that fails for any reason but bad input
            (a crashed worker, a lost node, an exception other than ValueError
            / OSError). A retried shard replaces what its failed attempt
            wrote, so nothing is counted twice.

    A run killed or interrupted leaves its finished shards in its staging
    folder; the same call again resumes from them (`bytepair.counts.protocol`).

    Returns:
        WordCounts: the opened artifact (manifest ``engine: "ray"``).

    Raises:
        ImportError: ray is not installed (``pip install 'bytepair[ray]'``).
        ValueError, OSError: bad input, raised on the driver as the task raised
            it (the message names the file, record and byte offset).
        ray.exceptions.RayError: a task that still failed after its retries.
    """
    ray, shutdown, runtime_env = start_ray(address, runtime_env)
    staging = None
    pending: dict[Any, int] = {}
    done: dict[int, dict[str, Any]] = {}
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        sizes = [input_size(p) for p in paths]
        groups = plan_shards(sizes, shards or default_shards(sizes, cpus))
        parts = parts or cpus
        plan = run_plan(spec, paths, sizes, groups, parts, max_memory=max_memory)
        staging = staging_dir(out, plan)
        done = finished_shards(staging, paths, groups)
        options = {"num_cpus": 1, "max_retries": max_retries, "retry_exceptions": True}
        if runtime_env:
            options["runtime_env"] = runtime_env
        count_task = ray.remote(_count_shard_task).options(**options)
        reduce_task = ray.remote(reduce_bucket).options(**options)

        with ProgressBar(sum(sizes), "counting", unit="B", scale=True, enabled=progress) as bar:

            def shard_done(shard_id: int) -> None:
                bar.update_to(bar.n + sum(sizes[i] for i in groups[shard_id]))
                files = sum(d["files"] for d in done.values())
                bar.set_postfix(files=f"{files}/{len(paths)}", shards=f"{len(done)}/{len(groups)}")

            for shard_id in done:
                shard_done(shard_id)
            queue = [s for s in range(len(groups)) if s not in done]
            while queue or pending:
                while queue and (num_tasks is None or len(pending) < num_tasks):
                    s = queue.pop(0)
                    files = [paths[i] for i in groups[s]]
                    ref = count_task.remote(files, spec, staging, s, parts, max_memory, _fail_once)
                    pending[ref] = s
                ready, _ = ray.wait(list(pending), num_returns=1)
                shard_id = pending.pop(ready[0])
                stats = ray.get(ready[0])
                if isinstance(stats, BaseException):
                    raise stats  # bad input: the task's own ValueError / OSError
                done[shard_id] = stats
                shard_done(shard_id)
        inputs = [bucket_paths(staging, range(len(groups)), b) for b in range(parts)]
        written = [finished_part(staging, inputs[b], b) for b in range(parts)]
        refs = {
            b: reduce_task.remote(
                inputs[b], os.path.join(staging, part_name(b)), max_memory=max_memory
            )
            for b in range(parts)
            if written[b] is None
        }
        for b, result in zip(refs, ray.get(list(refs.values()))):
            written[b] = result
    except BaseException as e:
        if staging is not None:
            # The other shards' tasks may still be writing into the staging
            # folder (and would make it again after it is removed): stop them
            # first; then a failed run leaves nothing behind, and an
            # interrupted one its finished shards.
            for ref in pending:
                ray.cancel(ref, force=True)
            if pending:
                ray.wait(list(pending), num_returns=len(pending), timeout=60)
            if isinstance(e, KeyboardInterrupt):
                interrupted(staging, len(done), len(groups))
            else:
                shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if shutdown:
            ray.shutdown()
    return WordCounts.open(
        finish(
            staging,
            out,
            spec,
            written,
            {
                "documents": sum(d["documents"] for d in done.values()),
                "bytes": sum(d["bytes"] for d in done.values()),
            },
            engine="ray",
            max_memory=max_memory,
            pruned=sum_pruned([d["pruned"] for d in done.values()]),
        )
    )


def _count_shard_task(
    files: list[str],
    spec: CountSpec,
    staging: str,
    shard_id: int,
    parts: int,
    max_memory: int | None,
    fail_once: str | None,
) -> dict[str, Any] | BaseException:
    """One Ray task: `count_shard` on one CPU. Bad input (ValueError, OSError)
    is returned, not raised, so Ray does not retry what would fail again and
    the driver re-raises the original exception, message intact."""
    try:
        return count_shard(
            files,
            spec,
            staging,
            shard_id,
            parts,
            num_threads=1,
            max_memory=max_memory,
            _fail_after_write=fail_once,
        )
    except (ValueError, OSError) as e:
        return e


def start_ray(
    address: str | None, runtime_env: dict[str, Any] | None
) -> tuple[Any, bool, dict[str, Any] | None]:
    """(ray, whether this call started it and must shut it down, the
    runtime_env each task still needs). Joins `address`, ``RAY_ADDRESS`` or
    the running Ray, else starts a local one; when joining a cluster, ships
    bytepair as the job's `runtime_env` (default `default_runtime_env`)."""
    ray = _import_ray()
    if ray.is_initialized():
        return ray, False, runtime_env
    joining = address is not None or bool(os.environ.get("RAY_ADDRESS"))
    ray.init(
        address=address,
        include_dashboard=False,
        logging_level="WARNING",
        log_to_driver=False,
        runtime_env=runtime_env
        if runtime_env is not None
        else default_runtime_env()
        if joining
        else None,
    )
    return ray, True, None  # the job's own runtime_env: every task has it


def default_runtime_env() -> dict[str, Any]:
    """``{"py_modules": [<bytepair package folder>]}``: ships this bytepair
    (its Python code and the compiled core) to the workers of a cluster that
    may not have it installed (job level: given to ``ray.init``)."""
    import bytepair

    return {"py_modules": [os.path.dirname(bytepair.__file__)]}


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError("engine='ray' needs Ray: pip install 'bytepair[ray]'") from e
    return ray
