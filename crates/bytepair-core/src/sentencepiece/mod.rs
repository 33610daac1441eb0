//! SentencePiece-style BPE (Llama 1/2, Mistral 7B, Gemma, ...): merges start
//! from characters, spaces are "▁", a dummy prefix is added, and characters the
//! vocabulary lacks become `<0xNN>` byte pieces or `<unk>`. Read from
//! SentencePiece `.model` files (`proto`, `model`), normalized as SentencePiece
//! normalizes (`normalize`, `charsmap`), encoded with the ids of
//! `SentencePieceProcessor.encode` (`encode`, `merge`, `vocab`; `reference`
//! is the plain form) and decoded as it decodes (`decode`).

pub mod charsmap;
pub mod count;
pub mod cuts;
pub mod decode;
pub mod encode;
pub mod files;
mod merge;
pub mod model;
pub mod normalize;
pub mod proto;
pub mod reference;
mod scan;
#[cfg(test)]
mod tests;
pub mod train;
mod units;
mod user;
mod vocab;
mod words;

pub use cuts::SpmSegments;
pub use encode::{Spans, SpmEncoder, SpmOptions};
pub use model::{Kind, Model, ModelError, Normalization, Piece};
pub use normalize::Place;
pub use proto::ModelProto;
