//! The preset patterns (`gpt2`, `cl100k`, `o200k`, as tiktoken ships them;
//! `llama3`, `qwen2`, as those models' tokenizer.json spells them), and
//! SuperBPE's stage-2 pre-tokenization (`superbpe`).

/// GPT-2's pattern (tiktoken `gpt2`, HF ByteLevel).
pub const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// tiktoken `cl100k_base`, as tiktoken >= 0.8 ships it: the `\s++$` branch sits
/// before `\s*[\r\n]`, so trailing whitespace holding a newline is one pre-token
/// (`"a\n  "` -> `a`, `\n  `), unlike the pattern first published.
pub const CL100K_PATTERN: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+",
    r"| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
);
/// tiktoken `o200k_base`.
pub const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// Llama 3's Split regex (Meta's tokenizer.json; tiktoken's `cl100k_base`
/// pattern as first published): cl100k's branches but for whitespace, which
/// is o200k's (`\s*[\r\n]+|\s+(?!\S)|\s+`: trailing whitespace that holds a
/// newline followed by other whitespace is split after that newline).
pub const LLAMA3_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
/// Qwen2's (and Qwen3's) Split regex: Llama 3's with one digit per pre-token
/// (`\p{N}` for `\p{N}{1,3}`).
pub const QWEN2_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// SuperBPE's stage-2 pre-tokenization (Liu et al., "SuperBPE: Space Travel
/// for Language Models", COLM 2025), as `regex.findall` takes it. The authors'
/// stage-2 regex (PythonNut/superbpe @ bbd0976, scripts/extend_tokenizer.sh),
/// run by HF tokenizers as `Split(regex, Isolated)` on each line of the corpus
/// (its trainer reads files line by line, each line with its `\n`): the runs
/// it isolates (1 to 3 digits; 2 or more punctuation characters with an
/// optional space before and the `\r`, `/` and `\n` after them; spaces not
/// followed by text) and the rest of each line between them, up to and with
/// its `\n`. docs/design.md (SuperBPE) has the derivation.
pub const SUPERBPE_PATTERN: &str = concat!(
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r/]*\n?| +(?!\S)",
    r"|(?:(?!\p{N}| ?[^\s\p{L}\p{N}]{2,}| +(?!\S))[^\n])+\n?|\n"
);

/// A preset pattern, run by its scalar state machine (`super::scalar`) and
/// the block scanner (`super::blocks`), never by a regex engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preset {
    Gpt2,
    Cl100k,
    O200k,
    Llama3,
    Qwen2,
}

impl Preset {
    /// The preset a name (`gpt2`, `r50k_base`, `cl100k_base`, ...) or a full
    /// regex stands for, if any.
    pub fn of(name_or_pattern: &str) -> Option<Preset> {
        match resolve_pattern(name_or_pattern) {
            GPT2_PATTERN => Some(Preset::Gpt2),
            CL100K_PATTERN => Some(Preset::Cl100k),
            O200K_PATTERN => Some(Preset::O200k),
            LLAMA3_PATTERN => Some(Preset::Llama3),
            QWEN2_PATTERN => Some(Preset::Qwen2),
            _ => None,
        }
    }

    /// The end of the pre-token that starts at `pos` (see `super::scalar`).
    #[inline]
    pub fn advance(self, text: &[u8], pos: usize) -> usize {
        match self {
            Preset::Gpt2 => super::scalar::gpt2(text, pos),
            Preset::Cl100k => super::scalar::cl100k(text, pos),
            Preset::O200k => super::scalar::o200k(text, pos),
            Preset::Llama3 => super::scalar::llama3(text, pos),
            Preset::Qwen2 => super::scalar::qwen2(text, pos),
        }
    }
}

/// Resolve a preset name to its regex; any other string is taken as a pattern.
pub fn resolve_pattern(name_or_pattern: &str) -> &str {
    match name_or_pattern {
        "gpt2" | "r50k_base" | "p50k_base" => GPT2_PATTERN,
        "cl100k" | "cl100k_base" => CL100K_PATTERN,
        "o200k" | "o200k_base" => O200K_PATTERN,
        "llama3" => LLAMA3_PATTERN,
        "qwen2" => QWEN2_PATTERN,
        "superbpe" => SUPERBPE_PATTERN,
        other => other,
    }
}

/// Is `name_or_pattern` SuperBPE's stage-2 pattern (by name or regex)?
pub fn is_superbpe(name_or_pattern: &str) -> bool {
    resolve_pattern(name_or_pattern) == SUPERBPE_PATTERN
}

/// Is `name_or_pattern` one of the presets (gpt2, cl100k, o200k, llama3, qwen2;
/// by name or regex)?
pub fn is_preset(name_or_pattern: &str) -> bool {
    Preset::of(name_or_pattern).is_some()
}
