//! The core's typed errors as Python exceptions: bad input is a ValueError
//! naming the value, file or offset at fault; an unreadable file an OSError.

use bytepair_core::count::CountError;
use bytepair_core::encode::{EncodeError, EncoderError};
use bytepair_core::wordcounts::ColumnsError;
use bytepair_core::PatternError;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

pub fn count_error(e: CountError) -> PyErr {
    match e {
        CountError::Cancelled => PyRuntimeError::new_err("cancelled"),
        CountError::InvalidUtf8 { .. } | CountError::InvalidUtf8InDocument { .. } => {
            PyValueError::new_err(format!(
                "{e} (pass errors=\"replace\" to replace bad bytes)"
            ))
        }
        CountError::Io { .. } => PyOSError::new_err(e.to_string()),
        CountError::BadOffsets(_) | CountError::Search(_) => PyValueError::new_err(e.to_string()),
    }
}

pub fn columns_error(e: ColumnsError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub fn pattern_error(e: PatternError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub fn encoder_error(e: EncoderError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// An encode error of `text`; a disallowed special token gets tiktoken's
/// message, with the offset in characters (Python's unit), not bytes.
pub fn encode_error(e: EncodeError, text: &str) -> PyErr {
    match e {
        EncodeError::Disallowed(d) => {
            let chars = text[..d.offset].chars().count();
            PyValueError::new_err(format!(
                "Encountered text corresponding to disallowed special token {:?} \
                 at character offset {chars}.\n\
                 If you want this text to be encoded as a special token, \
                 pass it to `allowed_special`, e.g. `allowed_special={{{:?}, ...}}`.\n\
                 If you want this text to be encoded as normal text, \
                 disable the check for this token \
                 by passing `disallowed_special=(enc.special_tokens_set - {{{:?}}})`.\n\
                 To disable this check for all special tokens, pass `disallowed_special=()`.",
                d.token, d.token, d.token
            ))
        }
        other => PyValueError::new_err(other.to_string()),
    }
}
