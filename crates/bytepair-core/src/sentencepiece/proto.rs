//! SentencePiece's model file, `sentencepiece_model.proto` (google/sentencepiece,
//! `src/sentencepiece_model.proto`, proto2), as `prost` messages.
//!
//! Why prost with the schema written here, not a hand-written reader: protobuf's
//! wire format (varints, length-delimited fields, defaults of proto2 optional
//! fields) is a library's job, and prost is the maintained Rust implementation;
//! its derive needs no `protoc` at build time. Every field of the schema is
//! here, so a file read and written back keeps them all; extensions (tags 200
//! and up, which no released model uses) are not kept.

#![allow(clippy::derive_partial_eq_without_eq)]

use prost::Message;

/// `ModelProto`: the pieces and the specs of a model.
#[derive(Clone, PartialEq, Message)]
pub struct ModelProto {
    #[prost(message, repeated, tag = "1")]
    pub pieces: Vec<SentencePiece>,
    #[prost(message, optional, tag = "2")]
    pub trainer_spec: Option<TrainerSpec>,
    #[prost(message, optional, tag = "3")]
    pub normalizer_spec: Option<NormalizerSpec>,
    #[prost(message, optional, tag = "4")]
    pub self_test_data: Option<SelfTestData>,
    #[prost(message, optional, tag = "5")]
    pub denormalizer_spec: Option<NormalizerSpec>,
}

/// `ModelProto.SentencePiece`: one piece of the vocabulary (id = its index).
#[derive(Clone, PartialEq, Message)]
pub struct SentencePiece {
    #[prost(string, optional, tag = "1")]
    pub piece: Option<String>,
    #[prost(float, optional, tag = "2")]
    pub score: Option<f32>,
    #[prost(enumeration = "PieceType", optional, tag = "3", default = "Normal")]
    pub r#type: Option<i32>,
}

/// `ModelProto.SentencePiece.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum PieceType {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Byte = 6,
    Unused = 5,
}

/// `TrainerSpec.ModelType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ModelType {
    Unigram = 1,
    Bpe = 2,
    Word = 3,
    Char = 4,
}

/// `SelfTestData`: sample inputs and their expected pieces.
#[derive(Clone, PartialEq, Message)]
pub struct SelfTestData {
    #[prost(message, repeated, tag = "1")]
    pub samples: Vec<SelfTestSample>,
}

/// `SelfTestData.Sample`.
#[derive(Clone, PartialEq, Message)]
pub struct SelfTestSample {
    #[prost(string, optional, tag = "1")]
    pub input: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub expected: Option<String>,
}

/// `NormalizerSpec`: how text is normalized before the model sees it.
#[derive(Clone, PartialEq, Message)]
pub struct NormalizerSpec {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub precompiled_charsmap: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "3", default = "true")]
    pub add_dummy_prefix: Option<bool>,
    #[prost(bool, optional, tag = "4", default = "true")]
    pub remove_extra_whitespaces: Option<bool>,
    #[prost(bool, optional, tag = "5", default = "true")]
    pub escape_whitespaces: Option<bool>,
    #[prost(string, optional, tag = "6")]
    pub normalization_rule_tsv: Option<String>,
}

/// `TrainerSpec`: the options the model was trained with; encoding reads
/// `model_type`, `byte_fallback`, `treat_whitespace_as_suffix`, `unk_surface`
/// and the special pieces' names.
#[derive(Clone, PartialEq, Message)]
pub struct TrainerSpec {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, optional, tag = "7")]
    pub input_format: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub model_prefix: Option<String>,
    #[prost(enumeration = "ModelType", optional, tag = "3", default = "Unigram")]
    pub model_type: Option<i32>,
    #[prost(int32, optional, tag = "4", default = "8000")]
    pub vocab_size: Option<i32>,
    #[prost(string, repeated, tag = "5")]
    pub accept_language: Vec<String>,
    #[prost(int32, optional, tag = "6", default = "0")]
    pub self_test_sample_size: Option<i32>,
    #[prost(bool, optional, tag = "50", default = "false")]
    pub enable_differential_privacy: Option<bool>,
    #[prost(float, optional, tag = "51", default = "0.0")]
    pub differential_privacy_noise_level: Option<f32>,
    #[prost(uint64, optional, tag = "52", default = "0")]
    pub differential_privacy_clipping_threshold: Option<u64>,
    #[prost(float, optional, tag = "10", default = "0.9995")]
    pub character_coverage: Option<f32>,
    #[prost(uint64, optional, tag = "11", default = "0")]
    pub input_sentence_size: Option<u64>,
    #[prost(bool, optional, tag = "19", default = "true")]
    pub shuffle_input_sentence: Option<bool>,
    #[prost(int32, optional, tag = "12")]
    pub mining_sentence_size: Option<i32>,
    #[prost(int32, optional, tag = "13")]
    pub training_sentence_size: Option<i32>,
    #[prost(int32, optional, tag = "14", default = "1000000")]
    pub seed_sentencepiece_size: Option<i32>,
    #[prost(float, optional, tag = "15", default = "0.75")]
    pub shrinking_factor: Option<f32>,
    #[prost(int32, optional, tag = "18", default = "4192")]
    pub max_sentence_length: Option<i32>,
    #[prost(int32, optional, tag = "16", default = "16")]
    pub num_threads: Option<i32>,
    #[prost(int32, optional, tag = "17", default = "2")]
    pub num_sub_iterations: Option<i32>,
    #[prost(int32, optional, tag = "20", default = "16")]
    pub max_sentencepiece_length: Option<i32>,
    #[prost(bool, optional, tag = "21", default = "true")]
    pub split_by_unicode_script: Option<bool>,
    #[prost(bool, optional, tag = "23", default = "true")]
    pub split_by_number: Option<bool>,
    #[prost(bool, optional, tag = "22", default = "true")]
    pub split_by_whitespace: Option<bool>,
    #[prost(bool, optional, tag = "24", default = "false")]
    pub treat_whitespace_as_suffix: Option<bool>,
    #[prost(bool, optional, tag = "26", default = "false")]
    pub allow_whitespace_only_pieces: Option<bool>,
    #[prost(bool, optional, tag = "25", default = "false")]
    pub split_digits: Option<bool>,
    #[prost(string, optional, tag = "53", default = "")]
    pub pretokenization_delimiter: Option<String>,
    #[prost(string, repeated, tag = "30")]
    pub control_symbols: Vec<String>,
    #[prost(string, repeated, tag = "31")]
    pub user_defined_symbols: Vec<String>,
    #[prost(string, optional, tag = "36")]
    pub required_chars: Option<String>,
    #[prost(bool, optional, tag = "35", default = "false")]
    pub byte_fallback: Option<bool>,
    #[prost(bool, optional, tag = "32", default = "true")]
    pub vocabulary_output_piece_score: Option<bool>,
    #[prost(bool, optional, tag = "33", default = "true")]
    pub hard_vocab_limit: Option<bool>,
    #[prost(bool, optional, tag = "34", default = "false")]
    pub use_all_vocab: Option<bool>,
    #[prost(int32, optional, tag = "40", default = "0")]
    pub unk_id: Option<i32>,
    #[prost(int32, optional, tag = "41", default = "1")]
    pub bos_id: Option<i32>,
    #[prost(int32, optional, tag = "42", default = "2")]
    pub eos_id: Option<i32>,
    #[prost(int32, optional, tag = "43", default = "-1")]
    pub pad_id: Option<i32>,
    #[prost(string, optional, tag = "45", default = "<unk>")]
    pub unk_piece: Option<String>,
    #[prost(string, optional, tag = "46", default = "<s>")]
    pub bos_piece: Option<String>,
    #[prost(string, optional, tag = "47", default = "</s>")]
    pub eos_piece: Option<String>,
    #[prost(string, optional, tag = "48", default = "<pad>")]
    pub pad_piece: Option<String>,
    #[prost(string, optional, tag = "44", default = " \u{2047} ")]
    pub unk_surface: Option<String>,
    #[prost(bool, optional, tag = "49", default = "false")]
    pub train_extremely_large_corpus: Option<bool>,
    #[prost(string, optional, tag = "54", default = "")]
    pub seed_sentencepieces_file: Option<String>,
}

/// Why bytes are not a model file.
#[derive(Debug, thiserror::Error)]
#[error("not a SentencePiece model (protobuf ModelProto): {0}")]
pub struct DecodeProtoError(#[from] prost::DecodeError);

impl ModelProto {
    /// Parse a `.model` file's bytes.
    pub fn from_bytes(data: &[u8]) -> Result<Self, DecodeProtoError> {
        Ok(ModelProto::decode(data)?)
    }

    /// The file's bytes: fields in tag order, as SentencePiece writes them.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode_to_vec()
    }
}
