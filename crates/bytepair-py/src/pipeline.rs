//! A tokenizer.json pipeline from the plain tuples Python builds
//! (`bytepair.formats.hf_pipeline.core_spec`): the binding only maps names to
//! the core's types; the JSON is read and checked in Python.

use bytepair_core::pipeline::{split_step, AddedRule, Form, Normalizer, Pipeline, Step};
use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// `(kind, arguments)` of one normalizer or pre-tokenizer step.
pub type StepSpec = (String, Vec<String>);
/// `(token, single_word, lstrip, rstrip, normalized)`.
pub type RuleSpec = (String, bool, bool, bool, bool);
/// Normalizers, pre-tokenizer steps, added-token rules.
pub type PipelineSpec = (Vec<StepSpec>, Vec<StepSpec>, Vec<RuleSpec>);

fn arg<'a>(args: &'a [String], i: usize, kind: &str) -> PyResult<&'a str> {
    args.get(i)
        .map(String::as_str)
        .ok_or_else(|| PyValueError::new_err(format!("{kind}: missing argument {i}")))
}

fn normalizer((kind, args): &StepSpec) -> PyResult<Normalizer> {
    Ok(match kind.as_str() {
        "NFC" => Normalizer::Unicode(Form::Nfc),
        "NFD" => Normalizer::Unicode(Form::Nfd),
        "NFKC" => Normalizer::Unicode(Form::Nfkc),
        "NFKD" => Normalizer::Unicode(Form::Nfkd),
        "Lowercase" => Normalizer::Lowercase,
        "Strip" => Normalizer::Strip {
            left: arg(args, 0, kind)? == "1",
            right: arg(args, 1, kind)? == "1",
        },
        "Replace" => Normalizer::replace(arg(args, 0, kind)?, arg(args, 1, kind)?)
            .map_err(|e| PyValueError::new_err(e.to_string()))?,
        "Prepend" => Normalizer::Prepend(arg(args, 0, kind)?.to_string()),
        other => {
            return Err(PyValueError::new_err(format!(
                "normalizer {other} is not supported"
            )))
        }
    })
}

fn step((kind, args): &StepSpec) -> PyResult<Step> {
    match kind.as_str() {
        "Split" => split_step(
            arg(args, 0, kind)?,
            arg(args, 1, kind)?,
            arg(args, 2, kind)? == "1",
        )
        .map_err(|e| PyValueError::new_err(e.to_string())),
        "PrefixSpace" => Ok(Step::PrefixSpace),
        other => Err(PyValueError::new_err(format!(
            "pre-tokenizer step {other} is not supported"
        ))),
    }
}

/// The core pipeline and added-token rules of `spec`.
pub fn build(spec: &PipelineSpec) -> PyResult<(Pipeline, Vec<(String, AddedRule)>)> {
    let normalizers = spec.0.iter().map(normalizer).collect::<PyResult<_>>()?;
    let steps = spec.1.iter().map(step).collect::<PyResult<_>>()?;
    let rules = spec
        .2
        .iter()
        .map(|(t, single_word, lstrip, rstrip, normalized)| {
            (
                t.clone(),
                AddedRule {
                    single_word: *single_word,
                    lstrip: *lstrip,
                    rstrip: *rstrip,
                    normalized: *normalized,
                },
            )
        })
        .collect();
    Ok((Pipeline::new(normalizers, steps), rules))
}
