//! # rlx-cli — the `rlx` command-line tool
//!
//! The binary `rlx` inspects, runs, benchmarks, converts and packs models,
//! generates text with llama-family GGUF models and trains the digits
//! classifier (`rlx --help`). This library holds the part its tests and
//! other tools reuse: the numpy `.npy` reader / writer ([`npy`]).
#![deny(missing_docs)]

pub mod npy;
