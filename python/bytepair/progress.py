"""Progress bars (tqdm) fed by the Rust core's running totals."""

from __future__ import annotations


class ProgressBar:
    """A tqdm bar that can be switched off and is updated with running totals.

    The Rust core calls `update_to(done)` about ten times a second with the total
    done so far (bytes or merges), from the thread that called it.
    """

    def __init__(
        self, total: int | None, desc: str, *, unit: str, scale: bool = False, enabled: bool = True
    ):
        if (
            enabled
        ):  # imported here: tqdm.auto (asyncio, notebook checks) is a fifth of `import bytepair`
            from tqdm.auto import tqdm
        self._bar = (
            tqdm(
                total=total,
                desc=desc,
                unit=unit,
                unit_scale=scale,
                unit_divisor=1024 if scale else 1000,
                dynamic_ncols=True,
                leave=True,
            )
            if enabled
            else None
        )
        self.n = 0

    def update_to(self, done: int) -> None:
        if done > self.n:
            if self._bar is not None:
                self._bar.update(done - self.n)
            self.n = done

    def set_postfix(self, **values: object) -> None:
        """Show `values` after the bar (e.g. ``files="3/10"``)."""
        if self._bar is not None:
            self._bar.set_postfix(values, refresh=False)

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
