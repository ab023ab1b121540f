//! [`ChatTemplate`]: the Jinja chat template a GGUF file carries
//! (`tokenizer.chat_template`), rendered with `minijinja` under the settings
//! HF `transformers` and llama.cpp's Python bindings use: `trim_blocks`,
//! `lstrip_blocks`, `bos_token` / `eos_token` variables, `raise_exception`,
//! `strftime_now`, `tojson` and Python string methods (`.strip()`, ...).

use crate::error::{LlamaError, Result};
use crate::tokenizer::Tokenizer;
use minijinja::value::Kwargs;
use minijinja::{Environment, Error, ErrorKind, Value};
use rlx_gguf::Metadata;

/// Template instructions one render may run: far above any real chat
/// template's needs, it turns a hostile file's endless loop into an error.
const RENDER_FUEL: u64 = 2_000_000;

/// The metadata key of the template.
pub const CHAT_TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `"system"`, `"user"`, `"assistant"`, ...
    pub role: String,
    /// The text of the turn.
    pub content: String,
}

impl ChatMessage {
    /// A message from its role and text.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// A parsed chat template with the special-token texts it may use.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("bos_token", &self.bos_token)
            .field("eos_token", &self.eos_token)
            .finish_non_exhaustive()
    }
}

/// Python's `json.dumps` separators (`", "`, `": "`) for `tojson` without
/// an indent, as HF `transformers` renders it.
struct PythonCompact;

impl serde_json::ser::Formatter for PythonCompact {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.begin_array_value(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

/// `tojson` as `transformers` defines it: `json.dumps(x, ensure_ascii=False,
/// indent=indent)` (no HTML escaping, Python's separators); `indent` may be
/// positional or a keyword.
fn tojson(
    value: Value,
    indent: Option<usize>,
    kwargs: Kwargs,
) -> std::result::Result<Value, Error> {
    let indent = match indent {
        Some(n) => Some(n),
        None => kwargs.get::<Option<usize>>("indent")?,
    };
    kwargs.assert_all_used()?;
    let mut out = Vec::new();
    let written = match indent {
        None => {
            let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonCompact);
            serde::Serialize::serialize(&value, &mut ser)
        }
        Some(n) => {
            let pad = vec![b' '; n];
            let fmt = serde_json::ser::PrettyFormatter::with_indent(&pad);
            let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
            serde::Serialize::serialize(&value, &mut ser)
        }
    };
    written.map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    Ok(Value::from_safe_string(
        String::from_utf8(out).expect("serde_json writes UTF-8"),
    ))
}

fn template_error(stage: &'static str) -> impl Fn(Error) -> LlamaError {
    move |e| {
        let mut message = e.to_string();
        if let Some(line) = e.line() {
            message += &format!(" (template line {line})");
        }
        LlamaError::ChatTemplate { stage, message }
    }
}

impl ChatTemplate {
    /// Parses `source`; `bos_token` / `eos_token` are the texts the
    /// template sees under those names.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<ChatTemplate> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_fuel(Some(RENDER_FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function(
            "raise_exception",
            |msg: String| -> std::result::Result<Value, Error> {
                Err(Error::new(ErrorKind::InvalidOperation, msg))
            },
        );
        env.add_function(
            "strftime_now",
            |_format: String| -> std::result::Result<Value, Error> {
                Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "strftime_now is not supported (renders would not be reproducible)",
                ))
            },
        );
        env.add_template_owned("chat", source.to_string())
            .map_err(template_error("parse"))?;
        Ok(ChatTemplate {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        })
    }

    /// The file's template with the tokenizer's BOS / EOS texts, or `None`
    /// when the file has none.
    pub fn from_gguf(meta: &Metadata, tokenizer: &Tokenizer) -> Result<Option<ChatTemplate>> {
        if meta.get(CHAT_TEMPLATE_KEY).is_none() {
            return Ok(None);
        }
        let source = meta.get_str(CHAT_TEMPLATE_KEY)?;
        let text = |id: Option<u32>| id.and_then(|i| tokenizer.token_text(i)).unwrap_or("");
        ChatTemplate::new(source, text(tokenizer.bos()), text(tokenizer.eos())).map(Some)
    }

    /// The prompt text of `messages`, ending with the assistant's header when
    /// `add_generation_prompt` (encode it with `parse_special`).
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                Value::from_iter([
                    ("role", Value::from(m.role.as_str())),
                    ("content", Value::from(m.content.as_str())),
                ])
            })
            .collect();
        let ctx = minijinja::context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token,
            eos_token => self.eos_token,
        };
        let template = self.env.get_template("chat").expect("added in new");
        template.render(ctx).map_err(template_error("render"))
    }
}
