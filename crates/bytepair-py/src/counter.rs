//! `WordCounter`: word counts accumulated from files, texts, documents in
//! Arrow layout or word-counts parts (`bytepair_core::count::Accumulator`),
//! then trained on (`train`).

use bytepair_core::count::{
    self, Accumulated, Accumulator, CountError, Limits, PipelineWords, Prune, ScaleError, Words,
};
use bytepair_core::pipeline::AddedRule;
use bytepair_core::train::budget::TrainingCost;
use bytepair_core::{train, wordcounts, CutRule, PreTokenizer};
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrow::le_i64s;
use crate::encoder::CoreBPE;
use crate::errors::{columns_error, count_error, pattern_error};
use crate::pipeline::PipelineSpec;
use crate::runtime::run_with_progress;

/// What `WordCounter::train` returns: ([(left id, right id, pair count)],
/// why it stopped early (None, "no_pair" or "min_frequency"), tokens in the
/// counted text after all merges).
type TrainResult = (Vec<(u32, u32, u64)>, Option<&'static str>, u64);

/// One word-counts part as Arrow buffers: (data, offsets, counts) bytes.
type PartBuffers<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// Word counts accumulated from texts or files, then trained on.
#[pyclass(module = "bytepair._core")]
pub struct WordCounter {
    pre: Words,
    cut: CutRule,
    limits: Limits,
    counts: Accumulator,
    /// The special-token strings, which cut words added as counted
    /// (`add_counts`, `add_columns`) as they cut text.
    specials: Option<bytepair_core::pretokenize::AhoCorasick>,
}

#[pymethods]
impl WordCounter {
    /// Pre-tokens longer than `max_word_bytes` (at least 4) are counted as
    /// consecutive words of at most that many bytes. `max_memory` (bytes): the
    /// budget of the counts (`count::Limits::max_memory`), None for no bound.
    /// `pipeline`: a tokenizer.json pipeline (see `crate::pipeline`), whose
    /// pieces are the words instead of `pattern`'s; its added-token rules apply
    /// to the special tokens they name. `sample`: the budget keeps a sample of
    /// the rare words (`count::Prune::Sample`, for SuperBPE's stage-2 pieces)
    /// instead of dropping them all.
    #[new]
    #[pyo3(signature = (
        pattern, special_tokens, max_word_bytes=count::DEFAULT_MAX_WORD_BYTES, max_memory=None,
        pipeline=None, sample=false
    ))]
    fn new(
        pattern: &str,
        special_tokens: Vec<String>,
        max_word_bytes: usize,
        max_memory: Option<usize>,
        pipeline: Option<PipelineSpec>,
        sample: bool,
    ) -> PyResult<Self> {
        if max_word_bytes < 4 {
            return Err(PyValueError::new_err(format!(
                "max_word_bytes must be at least 4, got {max_word_bytes}"
            )));
        }
        let (pre, cut) = match pipeline {
            None => (
                Words::Pattern(PreTokenizer::new(pattern, &special_tokens).map_err(pattern_error)?),
                CutRule::new(pattern, &special_tokens),
            ),
            Some(spec) => {
                let (pipeline, rules) = crate::pipeline::build(&spec)?;
                let specials = special_tokens
                    .iter()
                    .map(|t| (t.clone(), AddedRule::of(&rules, t)))
                    .collect();
                let words = PipelineWords::new(pipeline, specials).map_err(pattern_error)?;
                let cut = words.cut_rule().clone();
                (Words::Pipeline(words), cut)
            }
        };
        let prune = if sample { Prune::Sample } else { Prune::Rare };
        let limits = Limits {
            max_word_bytes,
            max_memory,
            prune,
        };
        let specials =
            bytepair_core::pretokenize::special_matcher(&special_tokens).map_err(pattern_error)?;
        Ok(WordCounter {
            pre,
            cut,
            limits,
            counts: Accumulator::new(max_memory).with_pruning(prune),
            specials,
        })
    }

    /// What the memory budget dropped so far: (distinct words, pre-tokens, the
    /// highest minimum count applied); all 0 when nothing was.
    #[getter]
    fn pruned(&self) -> (u64, u64, u64) {
        let pruned = self.counts.pruned();
        (pruned.words, pruned.pre_tokens, pruned.min_count)
    }

    /// Append the rows of one word-counts part as they are (Arrow
    /// `large_binary` words `data`, `offsets`; `counts` n little-endian i64;
    /// sorted, each word once): each word of an artifact is in one part, so
    /// the rows are kept (L + 12 bytes a word), not summed into a map.
    /// `budget` (bytes, taken from the first call): keep only the words the
    /// merge loop of a run of `merges` merges and `ids` token ids can hold
    /// within it (`bytepair_core::count::Accumulator::add_rows`); `fold`
    /// (taken from the first call): fold the words dropped into pieces of at
    /// most 8 bytes (`WordRows::folding`); `sample` (taken from the first
    /// call): keep a hash sample of them instead, each word sampled standing
    /// for the threshold's count (`WordRows::sampling`; not with `fold`). A batch
    /// holding a special-token string inside a word (a part made elsewhere:
    /// counting cuts there) is cut and summed as `add_columns` does instead.
    #[pyo3(signature = (
        data, offsets, counts, budget=None, ids=256, merges=0, fold=false, sample=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn load_rows(
        &mut self,
        py: Python<'_>,
        data: &[u8],
        offsets: &[u8],
        counts: &[u8],
        budget: Option<u64>,
        ids: usize,
        merges: usize,
        fold: bool,
        sample: bool,
    ) -> PyResult<()> {
        let keep = beyond_budget(fold, sample)?;
        let (offsets, n) = (le_i64s(offsets, "offsets")?, le_i64s(counts, "counts")?);
        let cost = TrainingCost::for_run(ids, merges);
        let (accumulator, specials) = (&mut self.counts, self.specials.as_ref());
        py.detach(|| {
            let mut cut = false;
            if let Some(specials) = specials {
                wordcounts::for_each_row(data, &offsets, &n, false, |w, _| {
                    cut = cut || specials.is_match(w)
                })?;
            }
            if cut {
                let words = accumulator.settled();
                wordcounts::add_rows(words, data, &offsets, &n, true, specials)
            } else {
                accumulator.add_rows((data, &offsets, &n), budget, cost, keep)
            }
        })
        .map_err(columns_error)
    }

    /// Drop the rarest words until the merge loop of a run of `merges` merges
    /// and `ids` token ids holds at most `budget` bytes for the words left:
    /// every word counted fewer than t times, t the smallest count that fits
    /// (counts taken as final); what is dropped is added to `pruned`.
    /// `fold`: fold the words dropped into pieces of at most 8 bytes, kept
    /// when they fit; `sample`: keep a hash sample of the words counted c < t
    /// times, each counted t, t the smallest threshold whose sample fits
    /// (`Accumulator::fit_training_budget`; not with `fold`).
    #[pyo3(signature = (budget, ids=256, merges=0, fold=false, sample=false))]
    fn fit_training_budget(
        &mut self,
        py: Python<'_>,
        budget: u64,
        ids: usize,
        merges: usize,
        fold: bool,
        sample: bool,
    ) -> PyResult<()> {
        let keep = beyond_budget(fold, sample)?;
        let accumulator = &mut self.counts;
        let cost = TrainingCost::for_run(ids, merges);
        py.detach(|| accumulator.fit_training_budget(budget, cost, keep));
        Ok(())
    }

    /// Count UTF-8 files, each one document; progress reports bytes read.
    #[pyo3(signature = (
        paths, num_threads=None, chunk_size=1 << 20, replace_errors=false, progress=None
    ))]
    fn count_files(
        &mut self,
        py: Python<'_>,
        paths: Vec<String>,
        num_threads: Option<usize>,
        chunk_size: usize,
        replace_errors: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let (pre, cut, limits) = (&self.pre, &self.cut, &self.limits);
        let counted = run_with_progress(py, num_threads, progress, |p| {
            count::count_files(pre, cut, &paths, chunk_size, replace_errors, limits, p)
        })?
        .map_err(count_error)?;
        self.counts.add_tally(counted);
        Ok(())
    }

    /// Count a batch of texts, each one document; progress reports UTF-8 bytes.
    #[pyo3(signature = (texts, num_threads=None, progress=None))]
    fn count_texts(
        &mut self,
        py: Python<'_>,
        texts: Vec<String>,
        num_threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let (pre, limits) = (&self.pre, &self.limits);
        let counted = run_with_progress(py, num_threads, progress, |p| {
            count::count_texts(pre, &texts, limits, p)
        })?
        .map_err(count_error)?;
        self.counts.add_tally(counted);
        Ok(())
    }

    /// Count documents in Arrow `large_string` layout: `data` holds their UTF-8
    /// bytes back to back, `offsets` n + 1 little-endian i64 positions in `data`.
    /// Progress reports bytes.
    /// Errors name `source` and, if `first_record` is given, the record number
    /// (`first_record` + index); else they name `source` alone (one document).
    #[pyo3(signature = (
        data, offsets, source, first_record=None, num_threads=None, replace_errors=false,
        progress=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn count_documents(
        &mut self,
        py: Python<'_>,
        data: &[u8],
        offsets: &[u8],
        source: &str,
        first_record: Option<u64>,
        num_threads: Option<usize>,
        replace_errors: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let offsets = le_i64s(offsets, "offsets")?;
        let (pre, limits) = (&self.pre, &self.limits);
        let counted = run_with_progress(py, num_threads, progress, |p| {
            count::count_documents(pre, data, &offsets, replace_errors, limits, p)
        })?
        .map_err(|e| match e {
            CountError::InvalidUtf8InDocument { index, offset } => {
                let path = count::document_name(source, first_record, index);
                count_error(CountError::InvalidUtf8 { path, offset })
            }
            other => count_error(other),
        })?;
        self.counts.add_tally(counted);
        Ok(())
    }

    /// Add the rows of one word-counts part (Arrow `large_binary` words: `data`,
    /// `offsets`; `counts` n little-endian i64), each word cut at the special
    /// tokens (`count::for_each_piece`). `unique` also rejects a word that
    /// repeats within the part (a part holds each word once).
    #[pyo3(signature = (data, offsets, counts, unique=true))]
    fn add_columns(
        &mut self,
        py: Python<'_>,
        data: &[u8],
        offsets: &[u8],
        counts: &[u8],
        unique: bool,
    ) -> PyResult<()> {
        let (offsets, n) = (le_i64s(offsets, "offsets")?, le_i64s(counts, "counts")?);
        let (words, specials) = (self.counts.settled(), self.specials.as_ref());
        py.detach(|| wordcounts::add_rows(words, data, &offsets, &n, unique, specials))
            .map_err(columns_error)
    }

    /// The counts split into `parts` buckets by the stable word hash
    /// (`wordcounts::bucket_of`), each a sorted part as (data, offsets, counts) bytes.
    // `&mut`: pending counts are settled first; the name is the Python API's.
    #[allow(clippy::wrong_self_convention)]
    fn to_buckets<'py>(
        &mut self,
        py: Python<'py>,
        parts: usize,
    ) -> PyResult<Vec<PartBuffers<'py>>> {
        if parts == 0 {
            return Err(PyValueError::new_err("parts must be at least 1"));
        }
        let counts = &*self.counts.settled();
        let buckets = py
            .detach(|| wordcounts::to_buckets(counts, parts))
            .map_err(columns_error)?;
        Ok(buckets
            .into_iter()
            .map(|c| {
                let offsets: Vec<u8> = c.offsets.iter().flat_map(|x| x.to_le_bytes()).collect();
                let counts: Vec<u8> = c.counts.iter().flat_map(|x| x.to_le_bytes()).collect();
                (
                    PyBytes::new(py, &c.data),
                    PyBytes::new(py, &offsets),
                    PyBytes::new(py, &counts),
                )
            })
            .collect())
    }

    /// Add (word bytes, count) pairs as given, without pre-tokenizing them;
    /// each word is cut at the special tokens (`count::for_each_piece`).
    fn add_counts(&mut self, items: Vec<(Vec<u8>, u64)>) {
        let (counts, specials) = (self.counts.settled(), self.specials.as_ref());
        for (w, n) in items {
            count::for_each_piece(&w, specials, |piece| count::add_word(counts, piece, n));
        }
    }

    /// Add the counts of `other` times `weight` (finite, >= 0) and empty it:
    /// an integer weight multiplies exactly, any other rounds each product to
    /// the nearest integer (halves away from zero); words that round to 0 are
    /// left out. OverflowError when a weighted count reaches 2^64.
    fn add_scaled(&mut self, mut other: PyRefMut<'_, WordCounter>, weight: f64) -> PyResult<()> {
        self.counts
            .add_scaled(&mut other.counts, weight)
            .map_err(|e| match e {
                ScaleError::BadWeight(_) => PyValueError::new_err(e.to_string()),
                ScaleError::Overflow { .. } => PyOverflowError::new_err(e.to_string()),
            })
    }

    fn __len__(&mut self) -> usize {
        self.counts.len()
    }

    /// Total number of pre-tokens counted, exact beyond 2^64 (counts read from
    /// artifacts can add up past it; a u64 sum wrapped).
    fn total(&self) -> u128 {
        self.counts.total()
    }

    /// All (word bytes, count), sorted by count descending then bytes.
    fn items<'py>(&mut self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u64)> {
        let items = self.counts.sorted();
        items
            .into_iter()
            .map(|(w, n)| (PyBytes::new(py, w), n))
            .collect()
    }

    /// Learn up to `num_merges` merges from the counts (which are consumed),
    /// within `min_frequency` and `max_token_length` (bytes). With `base` (the
    /// encoder of a tokenizer to extend), `base_tokens` its ordinary (id, bytes)
    /// and `first_new_id`, words are encoded with the base first and merge `r`
    /// makes id `first_new_id + r` (`train::train_on_base`).
    /// Returns ([(left id, right id, count)], stop reason, tokens after merging);
    /// progress reports merges. `superbpe` (with `base`, the stage-1
    /// tokenizer): SuperBPE's stage 2 over these counts of stage-2 pieces
    /// (`train::train_superwords`), tokens of at most `max_words` words; a
    /// sample the budget kept stands for the counts it was drawn from
    /// (`count::Accumulator::take_estimates`).
    #[pyo3(signature = (
        num_merges, num_threads=None, progress=None, min_frequency=0, max_token_length=None,
        base=None, base_tokens=Vec::new(), first_new_id=256, superbpe=false, max_words=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn train(
        &mut self,
        py: Python<'_>,
        num_merges: usize,
        num_threads: Option<usize>,
        progress: Option<Py<PyAny>>,
        min_frequency: u64,
        max_token_length: Option<usize>,
        base: Option<PyRef<'_, CoreBPE>>,
        base_tokens: Vec<(u32, Vec<u8>)>,
        first_new_id: u32,
        superbpe: bool,
        max_words: Option<usize>,
    ) -> PyResult<TrainResult> {
        if superbpe && base.is_none() {
            return Err(PyValueError::new_err(
                "superbpe training needs base, the stage-1 tokenizer",
            ));
        }
        // Counts of files and texts only come as a tally: trained on as they
        // are, unless a sample must stand for what it left out.
        let counts = if superbpe || self.limits.prune == Prune::Sample {
            Accumulated::Counts(self.counts.take_estimates())
        } else {
            self.counts.take()
        };
        let options = train::TrainOptions {
            min_frequency,
            max_token_length,
        };
        let encoder = base.as_ref().map(|b| &b.enc);
        let rules = train::SuperwordRules { max_words };
        let trained = run_with_progress(py, num_threads, progress, |p| match (encoder, counts) {
            (None, Accumulated::Tally(tally)) => train::train_with(tally, num_merges, &options, p),
            (None, Accumulated::Rows(rows)) => train::train_with(rows, num_merges, &options, p),
            (None, Accumulated::Counts(words)) => train::train_with(words, num_merges, &options, p),
            (Some(encoder), counts) if superbpe => {
                let base = train::Base {
                    encoder,
                    tokens: base_tokens,
                    first_new_id,
                };
                let pieces = counts.into_counts();
                train::train_superwords(pieces, base, num_merges, rules, &options, p)
            }
            (Some(encoder), counts) => {
                let base = train::Base {
                    encoder,
                    tokens: base_tokens,
                    first_new_id,
                };
                train::train_on_base(counts.into_counts(), base, num_merges, &options, p)
            }
        })?
        .map_err(|e| match e {
            train::TrainError::Cancelled => PyRuntimeError::new_err(e.to_string()),
            train::TrainError::CountsTooLarge { .. } => PyOverflowError::new_err(e.to_string()),
            train::TrainError::NotInBase(_) => PyValueError::new_err(e.to_string()),
        })?;
        let stop = match trained.stop {
            train::Stop::Finished => None,
            train::Stop::NoPairLeft => Some("no_pair"),
            train::Stop::BelowMinFrequency => Some("min_frequency"),
        };
        let merges = trained
            .merges
            .into_iter()
            .map(|m| (m.left, m.right, m.count))
            .collect();
        Ok((merges, stop, trained.tokens))
    }

    /// Characters of `text` after its last safe cut for counting (the cut rule
    /// of this pattern and these special tokens), or None when it has none:
    /// the blocks of a stream read in Python are cut there.
    fn chars_after_last_cut(&self, text: &str) -> Option<usize> {
        self.cut
            .last_cut(text.as_bytes())
            .map(|at| text[at..].chars().count())
    }
}

/// What a training budget does with the words it cannot hold (`fold`, `sample`
/// of `load_rows` and `fit_training_budget`).
fn beyond_budget(fold: bool, sample: bool) -> PyResult<wordcounts::BeyondBudget> {
    Ok(match (fold, sample) {
        (true, true) => {
            return Err(PyValueError::new_err(
                "fold and sample exclude each other: a sample already stands for the \
                 words it leaves out",
            ))
        }
        (true, false) => wordcounts::BeyondBudget::Fold,
        (false, true) => wordcounts::BeyondBudget::Sample,
        (false, false) => wordcounts::BeyondBudget::Drop,
    })
}
