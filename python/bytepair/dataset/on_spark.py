"""Encode token shards on Apache Spark: ``bytepair.encode_dataset(...,
engine="spark")``.

One Spark task per task of inputs (consecutive files of about 64 MiB) runs
the engine-neutral `bytepair.dataset.protocol.encode_task`, which writes that
task's shards and record straight into the output folder; the tokenizer
travels once as a broadcast variable, and only the small records come back to
the driver, which writes the manifest last. A retried task overwrites its own
shards only. The output folder must be on a filesystem the driver and every
executor see at the same path (local mode, or a shared mount); the session is
the active one, or a local one made for the run (`bytepair.counts.engines.on_spark`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bytepair.counts.engines.on_spark import run_action, spark_session, task_threads
from bytepair.dataset.protocol import TaskRun, encode_task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def encode_tasks_on_spark(
    run: TaskRun,
    on_record: Callable[[dict[str, Any]], None],
    *,
    spark: "SparkSession | None" = None,
) -> dict[int, dict[str, Any]]:
    """Run each task of `run` as a Spark task (with `run.num_threads` threads,
    default the task's ``spark.task.cpus``); returns {task: record}, calling
    `on_record` for each when the job ends (Spark returns them together).

    Raises:
        ImportError: pyspark is not installed.
        ValueError: bad input, with the worker's message (names the file).
    """
    session, created = spark_session(spark)
    spec, out_dir, num_threads = run.spec, run.out_dir, run.num_threads
    try:
        context = session.sparkContext
        shared = context.broadcast(run.tok)

        def encode(job: tuple[int, list[str]]) -> dict[str, Any]:
            return encode_task(
                job[0], job[1], spec, shared.value, out_dir, num_threads or task_threads()
            )

        jobs = run.todo
        records = (
            run_action(lambda: context.parallelize(jobs, max(1, len(jobs))).map(encode).collect())
            if jobs
            else []
        )
        shared.unpersist()
    finally:
        if created:
            session.stop()
    for record in records:
        on_record(record)
    return {r["task"]: r for r in records}
