//! The body of the `llama_load` fuzz target (`fuzz/`), shared with the
//! seeded mutation test of the normal suite (`tests/mutation.rs`).

use crate::{ChatMessage, ChatTemplate, LlamaConfig, LlamaModel, LlamaOptions, Tokenizer};
use rlx_gguf::GgufReader;

/// Parses `data` as GGUF and, as far as it is valid, loads the config, the
/// tokenizer (encoding and decoding a short text), the chat template
/// (rendering one turn) and the model (a 16-slot
/// context), then runs token 0. Errors are fine; a panic is a bug.
pub fn load_and_run(data: &[u8]) {
    let Ok(r) = GgufReader::new(data) else {
        return;
    };
    let _ = LlamaConfig::from_gguf(r.metadata());
    if let Ok(tk) = Tokenizer::from_gguf(r.metadata()) {
        let ids = tk.encode("Hi <|im_start|> 12 naïve  \n", true);
        let _ = tk.decode(&ids);
        if let Ok(Some(t)) = ChatTemplate::from_gguf(r.metadata(), &tk) {
            let _ = t.render(&[ChatMessage::new("user", "Hi")], true);
        }
    }
    let opts = LlamaOptions {
        context: 16,
        prefill_chunk: 1,
        ..LlamaOptions::default()
    };
    if let Ok(mut m) = LlamaModel::from_reader(&r, opts) {
        let mut cache = m.new_cache();
        let _ = m.forward(&[0], &mut cache);
    }
}
