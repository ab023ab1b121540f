//! [`Tokenizer`]: GPT-2 style byte-level BPE from a GGUF vocabulary
//! (`tokenizer.ggml.model = "gpt2"`, `tokenizer.ggml.tokens`,
//! `tokenizer.ggml.merges`, `tokenizer.ggml.token_type`).
//!
//! Encoding: split out the special (control / user-defined) tokens; split
//! the rest into pieces with the pre-tokenizer of `tokenizer.ggml.pre`
//! (GPT-2's regex, after isolating every digit for `smollm` / `starcoder`
//! / `refact`); map each piece's bytes to GPT-2's printable characters;
//! merge adjacent symbols by merge rank, lowest first, as HF `tokenizers`
//! and llama.cpp do.

use crate::error::{LlamaError, Result};
use regex::Regex;
use rlx_gguf::Metadata;
use std::collections::HashMap;

/// ggml token types that are matched whole in text (control, user-defined).
const SPECIAL_TYPES: [i64; 2] = [3, 4];

/// The symbol of a byte the vocabulary has no token for (never merges).
const NO_TOKEN: u32 = u32::MAX;

/// GPT-2's split pattern without its `\s+(?!\S)` lookahead, which
/// [`pieces`] applies by hand (the `regex` crate has no lookaround).
const GPT2_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+";

/// A byte-level BPE tokenizer.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    /// `(left, right) -> (rank, merged)`.
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// Each byte's token; `None` for a byte the vocabulary lacks.
    byte_ids: [Option<u32>; 256],
    unknown: Option<u32>,
    char_bytes: HashMap<char, u8>,
    specials: Vec<(String, u32)>,
    split_digits: bool,
    pattern: Regex,
    bos: Option<u32>,
    eos: Option<u32>,
}

impl Tokenizer {
    /// Builds the tokenizer from GGUF metadata; a missing key, another
    /// model type or a merge naming an unknown token is an error.
    pub fn from_gguf(meta: &Metadata) -> Result<Tokenizer> {
        let model = meta.get_str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(LlamaError::BadMetadata {
                key: "tokenizer.ggml.model".into(),
                expected: "\"gpt2\" (byte-level BPE)".into(),
                given: format!("{model:?}"),
            });
        }
        let pre = match meta.get("tokenizer.ggml.pre") {
            Some(_) => meta.get_str("tokenizer.ggml.pre")?,
            None => "default",
        };
        let split_digits = match pre {
            "smollm" | "starcoder" | "refact" => true,
            "default" | "gpt2" | "gpt-2" => false,
            other => {
                return Err(LlamaError::BadMetadata {
                    key: "tokenizer.ggml.pre".into(),
                    expected: "one of smollm, starcoder, refact, gpt2, default".into(),
                    given: format!("{other:?}"),
                })
            }
        };
        let tokens: Vec<String> = strings(meta, "tokenizer.ggml.tokens")?;
        let ids: HashMap<String, u32> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let types = match meta.get("tokenizer.ggml.token_type") {
            Some(_) => {
                let a = meta.get_array("tokenizer.ggml.token_type")?;
                a.as_i64s().ok_or_else(|| {
                    LlamaError::Tokenizer(
                        "tokenizer.ggml.token_type is not an integer array".into(),
                    )
                })?
            }
            None => vec![1; tokens.len()],
        };
        if types.len() != tokens.len() {
            return Err(LlamaError::Tokenizer(format!(
                "tokenizer.ggml.token_type has {} entries for {} tokens",
                types.len(),
                tokens.len()
            )));
        }
        let (byte_chars, char_bytes) = byte_alphabet();
        // Some vocabularies (SmolLM2's) lack a few control bytes.
        let mut byte_ids = [None; 256];
        for (b, c) in byte_chars.iter().enumerate() {
            byte_ids[b] = ids.get(&c.to_string()).copied();
        }
        let mut merges = HashMap::new();
        for (rank, m) in strings(meta, "tokenizer.ggml.merges")?.iter().enumerate() {
            let (l, r) = m.split_once(' ').ok_or_else(|| {
                LlamaError::Tokenizer(format!("merge {rank} {m:?} is not \"left right\""))
            })?;
            let id = |s: &str| {
                ids.get(s).copied().ok_or_else(|| {
                    LlamaError::Tokenizer(format!("merge {rank} {m:?} names unknown token {s:?}"))
                })
            };
            let merged = id(&format!("{l}{r}"))?;
            merges
                .entry((id(l)?, id(r)?))
                .or_insert((rank as u32, merged));
        }
        let mut specials: Vec<(String, u32)> = tokens
            .iter()
            .zip(&types)
            .enumerate()
            .filter(|(_, (t, ty))| SPECIAL_TYPES.contains(ty) && !t.is_empty())
            .map(|(i, (t, _))| (t.clone(), i as u32))
            .collect();
        // Longest first, so a special token that prefixes another loses.
        specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let special_id = |key: &str| -> Result<Option<u32>> {
            if !meta.contains_key(key) {
                return Ok(None);
            }
            let id = meta.get_u64(key)?;
            if id as usize >= tokens.len() {
                return Err(LlamaError::TokenOutOfRange {
                    id: id as u32,
                    vocab: tokens.len(),
                });
            }
            Ok(Some(id as u32))
        };
        Ok(Tokenizer {
            bos: special_id("tokenizer.ggml.bos_token_id")?,
            eos: special_id("tokenizer.ggml.eos_token_id")?,
            unknown: special_id("tokenizer.ggml.unknown_token_id")?,
            tokens,
            ids,
            merges,
            byte_ids,
            char_bytes,
            specials,
            split_digits,
            pattern: Regex::new(GPT2_PATTERN).expect("a valid pattern"),
        })
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The beginning-of-sequence token, if the file names one.
    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    /// The end-of-sequence token, if the file names one.
    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    /// The text of token `id` as stored in the vocabulary (`None` past its
    /// end).
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// The id of a token's exact text.
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// Token ids of `text`; with `parse_special`, control tokens written in
    /// the text (`<|im_start|>`) become their ids, else they are plain text.
    pub fn encode(&self, text: &str, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = if parse_special {
                self.specials
                    .iter()
                    .filter_map(|(s, id)| rest.find(s.as_str()).map(|at| (at, s.len(), *id)))
                    .min_by_key(|&(at, _, _)| at)
            } else {
                None
            };
            let (plain, special) = match next {
                Some((at, len, id)) => (&rest[..at], Some((at + len, id))),
                None => (rest, None),
            };
            self.encode_plain(plain, &mut out);
            match special {
                Some((end, id)) => {
                    out.push(id);
                    rest = &rest[end..];
                }
                None => break,
            }
        }
        out
    }

    /// The text of `ids` (special tokens as their text); invalid UTF-8
    /// from partial byte sequences is replaced by U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        String::from_utf8_lossy(&self.decode_bytes(ids)).into_owned()
    }

    /// The raw bytes of `ids` (a token may end inside a UTF-8 character).
    pub fn decode_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            let Some(t) = self.tokens.get(id as usize) else {
                continue;
            };
            if self.specials.iter().any(|(_, s)| *s == id) {
                out.extend_from_slice(t.as_bytes());
                continue;
            }
            for c in t.chars() {
                match self.char_bytes.get(&c) {
                    Some(&b) => out.push(b),
                    None => out.extend_from_slice(c.to_string().as_bytes()),
                }
            }
        }
        out
    }

    fn encode_plain(&self, text: &str, out: &mut Vec<u32>) {
        for piece in pieces(&self.pattern, text, self.split_digits) {
            self.bpe(piece.as_bytes(), out);
        }
    }

    /// Merges one piece's byte symbols by rank and appends the ids; a byte
    /// without a token becomes the unknown token, or is dropped without one.
    fn bpe(&self, bytes: &[u8], out: &mut Vec<u32>) {
        let mut syms: Vec<u32> = bytes
            .iter()
            .map(|&b| self.byte_ids[b as usize].unwrap_or(NO_TOKEN))
            .collect();
        loop {
            let best = syms
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| self.merges.get(&(w[0], w[1])).map(|&(r, m)| (r, i, m)))
                .min();
            let Some((_, i, merged)) = best else { break };
            syms[i] = merged;
            syms.remove(i + 1);
        }
        for s in syms {
            match s {
                NO_TOKEN => out.extend(self.unknown),
                id => out.push(id),
            }
        }
    }
}

/// The pre-tokenizer: digits isolated (when asked), then GPT-2's regex.
fn pieces<'a>(pattern: &Regex, text: &'a str, split_digits: bool) -> Vec<&'a str> {
    let mut runs = Vec::new();
    if split_digits {
        let mut start = 0;
        for (i, c) in text.char_indices() {
            if is_number(c) {
                if start < i {
                    runs.push(&text[start..i]);
                }
                runs.push(&text[i..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        if start < text.len() {
            runs.push(&text[start..]);
        }
    } else {
        runs.push(text);
    }
    let mut out = Vec::new();
    for run in runs {
        let mut at = 0;
        while let Some(m) = pattern.find_at(run, at) {
            let mut end = m.end();
            let s = m.as_str();
            // `\s+(?!\S)`: a whitespace run followed by a non-space leaves
            // its last character to the next piece.
            if s.chars().all(char::is_whitespace) && end < run.len() && s.chars().count() > 1 {
                end -= s.chars().next_back().map_or(0, char::len_utf8);
            }
            out.push(&run[m.start()..end]);
            at = end;
        }
    }
    out
}

/// Whether `c` is in Unicode category N (`\p{N}`).
fn is_number(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// GPT-2's byte <-> printable character table.
fn byte_alphabet() -> ([char; 256], HashMap<char, u8>) {
    let mut chars = ['\0'; 256];
    let mut extra = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        chars[b as usize] = if printable {
            b as char
        } else {
            extra += 1;
            char::from_u32(255 + extra).expect("a valid char")
        };
    }
    let back = chars
        .iter()
        .enumerate()
        .map(|(b, &c)| (c, b as u8))
        .collect();
    (chars, back)
}

fn strings(meta: &Metadata, key: &str) -> Result<Vec<String>> {
    let a = meta.get_array(key)?;
    let s = a
        .as_strings()
        .ok_or_else(|| LlamaError::Tokenizer(format!("{key} is not a string array")))?;
    Ok(s.into_iter().map(str::to_string).collect())
}
