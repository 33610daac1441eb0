//! A SentencePiece BPE model as the encoder needs it: every piece with its
//! kind and score, and the normalizer spec, read from a `ModelProto` and
//! checked as SentencePiece's `ModelInterface::InitializePieces` checks it
//! (google/sentencepiece, `src/model_interface.cc`).

use super::charsmap::{CharsMap, CharsMapError};
use super::proto::{ModelProto, ModelType, NormalizerSpec, PieceType};

/// What a piece is (`ModelProto.SentencePiece.Type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Made by merges, output by encoding.
    Normal,
    /// `<unk>`: what an unknown character becomes without byte fallback.
    Unknown,
    /// `<s>`, `</s>`, ...: never made from text; decodes to nothing.
    Control,
    /// Matched whole in the text before any merge, never merged further.
    UserDefined,
    /// Merged like a normal piece, then split back into the pair it came from.
    Unused,
    /// `<0xNN>`: one byte of a character the vocabulary lacks (byte fallback).
    Byte,
}

impl Kind {
    /// Pieces SentencePiece keeps in its map of mergeable pieces (`pieces_`);
    /// the others are in `reserved_id_map_`.
    pub fn is_mergeable(self) -> bool {
        matches!(self, Kind::Normal | Kind::UserDefined | Kind::Unused)
    }

    /// The kind's number in the model file.
    pub fn proto_type(self) -> i32 {
        (match self {
            Kind::Normal => PieceType::Normal,
            Kind::Unknown => PieceType::Unknown,
            Kind::Control => PieceType::Control,
            Kind::UserDefined => PieceType::UserDefined,
            Kind::Unused => PieceType::Unused,
            Kind::Byte => PieceType::Byte,
        }) as i32
    }

    fn from_proto(t: PieceType) -> Kind {
        match t {
            PieceType::Normal => Kind::Normal,
            PieceType::Unknown => Kind::Unknown,
            PieceType::Control => Kind::Control,
            PieceType::UserDefined => Kind::UserDefined,
            PieceType::Unused => Kind::Unused,
            PieceType::Byte => Kind::Byte,
        }
    }
}

/// One piece; its id is its index in `Model::pieces`.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    pub text: String,
    pub score: f32,
    pub kind: Kind,
}

/// How text is normalized before the merges (`NormalizerSpec` and the
/// trainer option that moves the dummy prefix to the end).
#[derive(Clone, Debug)]
pub struct Normalization {
    pub charsmap: Option<CharsMap>,
    pub add_dummy_prefix: bool,
    pub remove_extra_whitespaces: bool,
    pub escape_whitespaces: bool,
    pub treat_whitespace_as_suffix: bool,
    /// HF tokenizers' Metaspace instead of SentencePiece's rule: no dummy
    /// prefix for a text whose normalized form starts with the space symbol.
    pub metaspace_prefix: bool,
    /// HF's `prepend_scheme: first`: only a text at the start of the input
    /// (not one after a special token) gets the dummy prefix.
    pub prefix_first_only: bool,
}

impl Normalization {
    fn from_spec(spec: &NormalizerSpec, suffix: bool, what: &str) -> Result<Self, ModelError> {
        let blob = spec.precompiled_charsmap.as_deref().unwrap_or_default();
        let charsmap = if blob.is_empty() {
            None
        } else {
            Some(CharsMap::new(blob).map_err(|e| ModelError::CharsMap(what.to_string(), e))?)
        };
        Ok(Normalization {
            charsmap,
            add_dummy_prefix: spec.add_dummy_prefix(),
            remove_extra_whitespaces: spec.remove_extra_whitespaces(),
            escape_whitespaces: spec.escape_whitespaces(),
            treat_whitespace_as_suffix: suffix,
            metaspace_prefix: false,
            prefix_first_only: false,
        })
    }
}

/// A checked SentencePiece BPE model.
#[derive(Clone, Debug)]
pub struct Model {
    pub pieces: Vec<Piece>,
    pub normalization: Normalization,
    /// Rules applied to decoded text (`denormalizer_spec`), if it has a charsmap.
    pub denormalizer: Option<Normalization>,
    pub byte_fallback: bool,
    pub unk_id: u32,
    /// What `<unk>` decodes to (`TrainerSpec.unk_surface`, default " \u{2047} ").
    pub unk_surface: String,
}

/// Why a model file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{0} models are not supported: only SentencePiece BPE (model_type BPE) is")]
    NotBpe(&'static str),
    #[error("piece {0} is empty")]
    EmptyPiece(usize),
    #[error("piece {id} {piece:?} has an unknown type {kind}")]
    BadType { id: usize, piece: String, kind: i32 },
    #[error("piece {id} {piece:?} has score {score}, not a finite number")]
    BadScore {
        id: usize,
        piece: String,
        score: f32,
    },
    #[error("piece {id} {piece:?} is already piece {first}")]
    Duplicate {
        id: usize,
        piece: String,
        first: usize,
    },
    #[error("no piece has type UNKNOWN (<unk>)")]
    NoUnknown,
    #[error("pieces {0} and {1} both have type UNKNOWN")]
    TwoUnknown(usize, usize),
    #[error("byte piece {id} {piece:?} but byte_fallback is false")]
    ByteWithoutFallback { id: usize, piece: String },
    #[error("byte piece {id} {piece:?} is not of the form <0xNN>")]
    BadByte { id: usize, piece: String },
    #[error("byte_fallback is true but there is no byte piece for 0x{0:02X}")]
    MissingByte(u8),
    #[error("{0}: {1}")]
    CharsMap(String, CharsMapError),
    #[error("{0} ids do not fit in 32 bits")]
    TooManyPieces(usize),
}

/// The byte of a `<0xNN>` piece (two upper-case hex digits, as
/// SentencePiece's `ByteToPiece` writes them).
pub fn byte_of_piece(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2
        || !hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(&c))
    {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

impl Model {
    /// The model of a parsed `.model` file.
    ///
    /// Errors: a model type other than BPE (named), and what SentencePiece
    /// refuses: an empty or duplicate piece, no `<unk>` or two, a byte piece
    /// without byte fallback or not `<0xNN>`, byte fallback without all 256
    /// byte pieces; also a score that is not finite and a corrupt charsmap.
    pub fn from_proto(proto: &ModelProto) -> Result<Self, ModelError> {
        let trainer = proto.trainer_spec.clone().unwrap_or_default();
        match trainer.model_type() {
            ModelType::Bpe => {}
            ModelType::Unigram => return Err(ModelError::NotBpe("Unigram")),
            ModelType::Word => return Err(ModelError::NotBpe("WORD")),
            ModelType::Char => return Err(ModelError::NotBpe("CHAR")),
        }
        if u32::try_from(proto.pieces.len()).is_err() {
            return Err(ModelError::TooManyPieces(proto.pieces.len()));
        }
        let mut pieces = Vec::with_capacity(proto.pieces.len());
        for (id, p) in proto.pieces.iter().enumerate() {
            let text = p.piece.clone().unwrap_or_default();
            let kind =
                PieceType::try_from(p.r#type.unwrap_or(1)).map_err(|_| ModelError::BadType {
                    id,
                    piece: text.clone(),
                    kind: p.r#type.unwrap_or(1),
                })?;
            pieces.push(Piece {
                text,
                score: p.score.unwrap_or(0.0),
                kind: Kind::from_proto(kind),
            });
        }
        let normalizer = proto.normalizer_spec.clone().unwrap_or_default();
        let suffix = trainer.treat_whitespace_as_suffix();
        let normalization = Normalization::from_spec(&normalizer, suffix, "normalizer_spec")?;
        let denormalizer = match &proto.denormalizer_spec {
            Some(spec) if !spec.precompiled_charsmap().is_empty() => {
                Some(Normalization::from_spec(spec, false, "denormalizer_spec")?)
            }
            _ => None,
        };
        Model::new(
            pieces,
            normalization,
            denormalizer,
            trainer.byte_fallback(),
            trainer.unk_surface().to_string(),
        )
    }

    /// A model of these parts, checked as `from_proto` checks a file's.
    pub fn new(
        pieces: Vec<Piece>,
        normalization: Normalization,
        denormalizer: Option<Normalization>,
        byte_fallback: bool,
        unk_surface: String,
    ) -> Result<Self, ModelError> {
        let mut seen = rustc_hash::FxHashMap::default();
        let mut unk_id = None;
        let mut bytes_found = [false; 256];
        for (id, p) in pieces.iter().enumerate() {
            if p.text.is_empty() {
                return Err(ModelError::EmptyPiece(id));
            }
            if !p.score.is_finite() {
                return Err(ModelError::BadScore {
                    id,
                    piece: p.text.clone(),
                    score: p.score,
                });
            }
            if let Some(&first) = seen.get(p.text.as_str()) {
                return Err(ModelError::Duplicate {
                    id,
                    piece: p.text.clone(),
                    first,
                });
            }
            seen.insert(p.text.as_str(), id);
            match p.kind {
                Kind::Unknown => match unk_id {
                    Some(first) => return Err(ModelError::TwoUnknown(first, id)),
                    None => unk_id = Some(id),
                },
                Kind::Byte => {
                    if !byte_fallback {
                        return Err(ModelError::ByteWithoutFallback {
                            id,
                            piece: p.text.clone(),
                        });
                    }
                    let byte = byte_of_piece(&p.text).ok_or_else(|| ModelError::BadByte {
                        id,
                        piece: p.text.clone(),
                    })?;
                    bytes_found[byte as usize] = true;
                }
                _ => {}
            }
        }
        let unk_id = unk_id.ok_or(ModelError::NoUnknown)? as u32;
        if byte_fallback {
            if let Some(missing) = (0..=255u8).find(|&b| !bytes_found[b as usize]) {
                return Err(ModelError::MissingByte(missing));
            }
        }
        Ok(Model {
            pieces,
            normalization,
            denormalizer,
            byte_fallback,
            unk_id,
            unk_surface,
        })
    }

    /// Does any piece have type UNUSED (merged, then split back)?
    pub fn has_unused(&self) -> bool {
        self.pieces.iter().any(|p| p.kind == Kind::Unused)
    }

    /// The merge priority of every mergeable piece: the rank of its score
    /// among the distinct scores, highest first (equal scores, equal ranks;
    /// SentencePiece then merges the leftmost pair). None for the others.
    /// Scores are ordered as sentencepiece 0.2.3 orders them (by their bit
    /// patterns: -0.0 below 0.0), which is `f32::total_cmp` for finite ones.
    pub fn score_ranks(&self) -> Vec<Option<u32>> {
        let mut scores: Vec<f32> = self
            .pieces
            .iter()
            .filter(|p| p.kind.is_mergeable())
            .map(|p| p.score)
            .collect();
        scores.sort_by(|a, b| b.total_cmp(a));
        scores.dedup_by(|a, b| a.to_bits() == b.to_bits());
        self.pieces
            .iter()
            .map(|p| {
                p.kind.is_mergeable().then(|| {
                    scores
                        .binary_search_by(|s| p.score.total_cmp(s))
                        .expect("every score is listed") as u32
                })
            })
            .collect()
    }
}
