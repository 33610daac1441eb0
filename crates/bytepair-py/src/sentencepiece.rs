//! SentencePiece BPE models as Python sees them: `SentencePieceModel` (a
//! `.model` file parsed, its fields read and written) and training
//! (`train_sentencepiece`); the encoder is `spm_encoder::CoreSPM`.

use bytepair_core::sentencepiece::proto::{ModelProto, NormalizerSpec, SentencePiece, TrainerSpec};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

/// A parsed SentencePiece model file (`ModelProto`).
#[pyclass(module = "bytepair._core", frozen)]
pub struct SentencePieceModel {
    pub(crate) proto: ModelProto,
}

pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl SentencePieceModel {
    /// Parse a `.model` file's bytes. ValueError: not a ModelProto.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(SentencePieceModel {
            proto: ModelProto::from_bytes(data).map_err(value_error)?,
        })
    }

    /// The model file's bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.proto.to_bytes())
    }

    /// Every piece: (text, score, type number), in id order.
    fn pieces(&self) -> Vec<(String, f32, i32)> {
        self.proto
            .pieces
            .iter()
            .map(|p| {
                (
                    p.piece.clone().unwrap_or_default(),
                    p.score.unwrap_or(0.0),
                    p.r#type.unwrap_or(1),
                )
            })
            .collect()
    }

    /// The model type's number (1 Unigram, 2 BPE, 3 Word, 4 Char).
    fn model_type(&self) -> i32 {
        self.proto
            .trainer_spec
            .as_ref()
            .map_or(1, |t| t.model_type() as i32)
    }

    /// The normalizer spec's fields, defaults filled in.
    fn normalizer<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let n = self.proto.normalizer_spec.clone().unwrap_or_default();
        let d = PyDict::new(py);
        d.set_item("name", n.name())?;
        d.set_item(
            "precompiled_charsmap",
            PyBytes::new(py, n.precompiled_charsmap()),
        )?;
        d.set_item("add_dummy_prefix", n.add_dummy_prefix())?;
        d.set_item("remove_extra_whitespaces", n.remove_extra_whitespaces())?;
        d.set_item("escape_whitespaces", n.escape_whitespaces())?;
        Ok(d)
    }

    /// The trainer spec's fields that bear on encoding and on the files
    /// written from it, defaults filled in.
    fn trainer<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.proto.trainer_spec.clone().unwrap_or_default();
        let d = PyDict::new(py);
        d.set_item("byte_fallback", t.byte_fallback())?;
        d.set_item("treat_whitespace_as_suffix", t.treat_whitespace_as_suffix())?;
        d.set_item("split_digits", t.split_digits())?;
        d.set_item("unk_surface", t.unk_surface())?;
        d.set_item("unk_piece", t.unk_piece())?;
        d.set_item("bos_piece", t.bos_piece())?;
        d.set_item("eos_piece", t.eos_piece())?;
        d.set_item("pad_piece", t.pad_piece())?;
        d.set_item("vocab_size", t.vocab_size())?;
        d.set_item("has_denormalizer", self.proto.denormalizer_spec.is_some())?;
        Ok(d)
    }

    /// A model of these parts (what training and conversions write):
    /// `pieces` (text, score, type number) in id order; `normalizer`:
    /// name, precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces,
    /// escape_whitespaces; `trainer`: any of byte_fallback, split_digits,
    /// treat_whitespace_as_suffix, vocab_size, character_coverage,
    /// max_sentencepiece_length, unk/bos/eos/pad ids and pieces, unk_surface,
    /// control_symbols, user_defined_symbols. Model type BPE.
    #[staticmethod]
    fn build(
        pieces: Vec<(String, f32, i32)>,
        normalizer: &Bound<'_, PyDict>,
        trainer: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let get_bool = |d: &Bound<'_, PyDict>, k: &str| -> PyResult<Option<bool>> {
            d.get_item(k)?.map(|v| v.extract()).transpose()
        };
        let get_i32 = |k: &str| -> PyResult<Option<i32>> {
            trainer.get_item(k)?.map(|v| v.extract()).transpose()
        };
        let get_str = |d: &Bound<'_, PyDict>, k: &str| -> PyResult<Option<String>> {
            d.get_item(k)?.map(|v| v.extract()).transpose()
        };
        let get_list = |k: &str| -> PyResult<Vec<String>> {
            Ok(trainer
                .get_item(k)?
                .map(|v| v.extract())
                .transpose()?
                .unwrap_or_default())
        };
        let normalizer_spec = NormalizerSpec {
            name: get_str(normalizer, "name")?,
            precompiled_charsmap: normalizer
                .get_item("precompiled_charsmap")?
                .map(|v| v.extract::<Vec<u8>>())
                .transpose()?,
            add_dummy_prefix: get_bool(normalizer, "add_dummy_prefix")?,
            remove_extra_whitespaces: get_bool(normalizer, "remove_extra_whitespaces")?,
            escape_whitespaces: get_bool(normalizer, "escape_whitespaces")?,
            normalization_rule_tsv: None,
        };
        let trainer_spec = TrainerSpec {
            model_type: Some(2),
            vocab_size: get_i32("vocab_size")?,
            byte_fallback: get_bool(trainer, "byte_fallback")?,
            split_digits: get_bool(trainer, "split_digits")?,
            treat_whitespace_as_suffix: get_bool(trainer, "treat_whitespace_as_suffix")?,
            character_coverage: trainer
                .get_item("character_coverage")?
                .map(|v| v.extract())
                .transpose()?,
            max_sentencepiece_length: get_i32("max_sentencepiece_length")?,
            unk_id: get_i32("unk_id")?,
            bos_id: get_i32("bos_id")?,
            eos_id: get_i32("eos_id")?,
            pad_id: get_i32("pad_id")?,
            unk_piece: get_str(trainer, "unk_piece")?,
            bos_piece: get_str(trainer, "bos_piece")?,
            eos_piece: get_str(trainer, "eos_piece")?,
            pad_piece: get_str(trainer, "pad_piece")?,
            unk_surface: get_str(trainer, "unk_surface")?,
            control_symbols: get_list("control_symbols")?,
            user_defined_symbols: get_list("user_defined_symbols")?,
            ..Default::default()
        };
        let proto = ModelProto {
            pieces: pieces
                .into_iter()
                .map(|(piece, score, kind)| SentencePiece {
                    piece: Some(piece),
                    score: Some(score),
                    r#type: Some(kind),
                })
                .collect(),
            trainer_spec: Some(trainer_spec),
            normalizer_spec: Some(normalizer_spec),
            self_test_data: None,
            denormalizer_spec: None,
        };
        Ok(SentencePieceModel { proto })
    }
}

/// A text given as a str or as UTF-8 bytes (a file read whole: no str made
/// and encoded again); bytes that are not UTF-8 are a UnicodeDecodeError
/// (checked by simdutf8 through `bytepair_core::str_from_utf8`).
fn text_of<'a>(text: &'a Bound<'_, PyAny>) -> PyResult<&'a str> {
    if let Ok(bytes) = text.cast::<PyBytes>() {
        let data = bytes.as_bytes();
        return bytepair_core::str_from_utf8(data).map_err(|e| {
            let py = text.py();
            match pyo3::exceptions::PyUnicodeDecodeError::new_utf8(py, data, e) {
                Ok(error) => PyErr::from_value(error.into_any()),
                Err(other) => other,
            }
        });
    }
    text.cast::<PyString>()?.to_str()
}

/// Open `paths` (each `os.fspath` of a path) for reading; an error is the
/// OSError `open(path, "rb")` raises (FileNotFoundError, IsADirectoryError,
/// PermissionError, ...: errno, message and path). Returns (path as text for
/// messages, file).
fn open_files(paths: &[Bound<'_, PyAny>]) -> PyResult<Vec<(String, std::fs::File)>> {
    paths
        .iter()
        .map(|given| {
            let path = match given.cast::<PyBytes>() {
                Ok(bytes) => path_of_bytes(bytes.as_bytes())?,
                Err(_) => given.extract::<std::path::PathBuf>()?,
            };
            let os_error = |e: std::io::Error| match e.raw_os_error() {
                Some(errno) => os_error_of(given, errno),
                None => PyOSError::new_err(format!("{}: {e}", path.display())),
            };
            let file = std::fs::File::open(&path).map_err(os_error)?;
            // Linux opens a directory for reading; Python's open refuses it.
            if file.metadata().is_ok_and(|m| m.is_dir()) {
                return Err(os_error_of(given, EISDIR));
            }
            Ok((path.display().to_string(), file))
        })
        .collect()
}

/// A path given as bytes (`os.fspath` of a bytes path).
fn path_of_bytes(bytes: &[u8]) -> PyResult<std::path::PathBuf> {
    #[cfg(unix)]
    return Ok(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes).into());
    #[cfg(not(unix))]
    return std::str::from_utf8(bytes)
        .map(Into::into)
        .map_err(|_| PyValueError::new_err("a bytes path that is not UTF-8"));
}

/// OSError(errno, os.strerror(errno), path): Python picks the subclass
/// (FileNotFoundError for ENOENT, ...) as `open` does.
fn os_error_of(path: &Bound<'_, PyAny>, errno: i32) -> PyErr {
    let py = path.py();
    let message = py
        .import("os")
        .and_then(|os| os.call_method1("strerror", (errno,)))
        .and_then(|m| m.extract::<String>())
        .unwrap_or_else(|_| format!("error {errno}"));
    PyOSError::new_err((errno, message, path.clone().unbind()))
}

/// EISDIR, the errno of reading a directory (21 on Linux and macOS).
const EISDIR: i32 = 21;

/// Why training on files or texts failed, turned into a Python exception
/// once the GIL is held again.
enum TrainFailure {
    /// Counting files: a read error, bytes that are not UTF-8, cancelled.
    Count(bytepair_core::count::CountError),
    /// A ValueError's message.
    Other(String),
}

impl TrainFailure {
    /// The exception: OSError for a read error, UnicodeDecodeError for bad
    /// UTF-8 (its reason names the file and the byte offset; `spm_train.py`
    /// raises the one decoding the file gives instead), else ValueError.
    /// `paths` as given, `names` as `open_files` named them.
    fn into_py(self, py: Python<'_>, paths: &[Bound<'_, PyAny>], names: &[String]) -> PyErr {
        use bytepair_core::count::CountError;
        match self {
            TrainFailure::Count(CountError::Io { path, source }) => {
                let given = names.iter().position(|n| *n == path).map(|i| &paths[i]);
                match (source.raw_os_error(), given) {
                    (Some(errno), Some(given)) => os_error_of(given, errno),
                    _ => PyOSError::new_err(format!("{path}: {source}")),
                }
            }
            TrainFailure::Count(CountError::InvalidUtf8 { path, offset }) => {
                let reason = format!("invalid UTF-8 at byte {offset} of {path}");
                let start = offset as usize;
                match pyo3::exceptions::PyUnicodeDecodeError::new(
                    py,
                    c"utf-8",
                    b"",
                    start..start + 1,
                    &std::ffi::CString::new(reason).unwrap_or_default(),
                ) {
                    Ok(error) => PyErr::from_value(error.into_any()),
                    Err(other) => other,
                }
            }
            TrainFailure::Count(e) => PyValueError::new_err(e.to_string()),
            TrainFailure::Other(message) => PyValueError::new_err(message),
        }
    }
}

/// Train a SentencePiece-style BPE model on `texts` (str or UTF-8 bytes, each
/// split into lines; see `bytepair_core::sentencepiece::train`) and return it. `normalizer`:
/// name, precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces
/// (escape_whitespaces is always on: pieces hold "▁"). Returns the model and
/// the bytes counted. `files` (paths, each `os.fspath` of one): train on
/// these text files instead of `texts`, read and counted a chunk at a time
/// (`bytepair_core::sentencepiece::files`). ValueError: a vocabulary too
/// small for the characters kept, a duplicate special piece, or an empty
/// corpus; UnicodeDecodeError: bytes that are not UTF-8; OSError: a file
/// that cannot be opened or read (as `open` raises it).
#[pyfunction]
#[pyo3(signature = (texts, normalizer, vocab_size, character_coverage, byte_fallback, split_digits, allow_whitespace_only_pieces, max_piece_chars, control_symbols, user_defined_symbols, min_frequency, num_threads=None, callback=None, files=None))]
#[allow(clippy::too_many_arguments)]
pub fn train_sentencepiece(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyAny>>,
    normalizer: &Bound<'_, PyDict>,
    vocab_size: usize,
    character_coverage: f64,
    byte_fallback: bool,
    split_digits: bool,
    allow_whitespace_only_pieces: bool,
    max_piece_chars: usize,
    control_symbols: Vec<String>,
    user_defined_symbols: Vec<String>,
    min_frequency: u64,
    num_threads: Option<usize>,
    callback: Option<Py<PyAny>>,
    files: Option<Vec<Bound<'_, PyAny>>>,
) -> PyResult<(SentencePieceModel, u64)> {
    use bytepair_core::sentencepiece::count::count_texts;
    use bytepair_core::sentencepiece::files::count_files;
    use bytepair_core::sentencepiece::normalize::Normalizer;
    use bytepair_core::sentencepiece::train::{train, SpmTrainOptions};
    use bytepair_core::sentencepiece::Normalization;

    let texts: Vec<&str> = texts.iter().map(text_of).collect::<PyResult<_>>()?;
    let paths = files.as_deref().unwrap_or_default();
    let files = files.as_deref().map(open_files).transpose()?;
    let names: Vec<String> = files.iter().flatten().map(|(n, _)| n.clone()).collect();
    let get_bool = |k: &str, default: bool| -> PyResult<bool> {
        Ok(normalizer
            .get_item(k)?
            .map(|v| v.extract())
            .transpose()?
            .unwrap_or(default))
    };
    let charsmap: Vec<u8> = normalizer
        .get_item("precompiled_charsmap")?
        .map(|v| v.extract())
        .transpose()?
        .unwrap_or_default();
    let spec = NormalizerSpec {
        name: Some(
            normalizer
                .get_item("name")?
                .map(|v| v.extract())
                .transpose()?
                .unwrap_or_else(|| "identity".to_string()),
        ),
        precompiled_charsmap: Some(charsmap.clone()),
        add_dummy_prefix: Some(get_bool("add_dummy_prefix", true)?),
        remove_extra_whitespaces: Some(get_bool("remove_extra_whitespaces", false)?),
        escape_whitespaces: Some(true),
        normalization_rule_tsv: None,
    };
    let rules = Normalization {
        charsmap: if charsmap.is_empty() {
            None
        } else {
            Some(
                bytepair_core::sentencepiece::charsmap::CharsMap::new(&charsmap)
                    .map_err(value_error)?,
            )
        },
        add_dummy_prefix: spec.add_dummy_prefix(),
        remove_extra_whitespaces: spec.remove_extra_whitespaces(),
        escape_whitespaces: true,
        treat_whitespace_as_suffix: false,
        metaspace_prefix: false,
        prefix_first_only: false,
    };
    let symbols: Vec<&str> = user_defined_symbols.iter().map(String::as_str).collect();
    let user = bytepair_core::sentencepiece::encode::user_matcher(&symbols).map_err(value_error)?;
    let options = SpmTrainOptions {
        vocab_size,
        character_coverage,
        byte_fallback,
        split_digits,
        allow_whitespace_only_pieces,
        max_piece_chars,
        control_symbols,
        user_defined_symbols,
        min_frequency,
    };
    let normalizer = Normalizer::new(rules, user.clone());
    let result = crate::runtime::run_with_progress(py, num_threads, callback, |progress| {
        let counts = match files {
            Some(files) => count_files(files, &normalizer, user.as_ref(), &options, progress)
                .map_err(TrainFailure::Count)?,
            None => count_texts(&texts, &normalizer, user.as_ref(), &options, progress)
                .map_err(|e| TrainFailure::Other(e.to_string()))?,
        };
        let bytes = counts.bytes;
        train(counts, spec, &options, progress)
            .map(|proto| (proto, bytes))
            .map_err(|e| TrainFailure::Other(e.to_string()))
    })?;
    let (proto, bytes) = result.map_err(|e| e.into_py(py, paths, &names))?;
    Ok((SentencePieceModel { proto }, bytes))
}
