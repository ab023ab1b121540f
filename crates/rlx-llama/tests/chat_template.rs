//! Chat templates rendered by [`ChatTemplate`] (minijinja) against
//! llama-cpp-python's Jinja2ChatFormatter (jinja2, HF `transformers`
//! settings), `tools/gen_llamacpp_refs.py`: SmolLM2's template from its GGUF
//! and a template using whitespace control, namespace(), string methods,
//! filters and tojson.

use rlx_gguf::GgufReader;
use rlx_llama::{ChatMessage, ChatTemplate, LlamaError, Tokenizer};
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/smollm2_llamacpp.json")).expect("fixture JSON")
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap()
}

fn messages(v: &Value) -> Vec<ChatMessage> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| ChatMessage::new(text(m, "role"), text(m, "content")))
        .collect()
}

/// Renders every case of `cases` with `template` and compares to jinja2.
fn check(template: &ChatTemplate, cases: &Value) {
    let cases = cases.as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let gen = c["add_generation_prompt"].as_bool().unwrap();
        let got = template.render(&messages(&c["messages"]), gen).unwrap();
        assert_eq!(got, text(c, "rendered"), "{:?}", c["messages"]);
    }
}

/// The fixture's template under `key` with its BOS / EOS texts.
fn template(fx: &Value, key: &str) -> ChatTemplate {
    let (bos, eos) = (text(fx, "bos_token"), text(fx, "eos_token"));
    ChatTemplate::new(text(fx, key), bos, eos).unwrap()
}

#[test]
fn smollm2_template_matches_jinja2() {
    let fx = fixture();
    check(&template(&fx, "chat_template"), &fx["chat"]);
}

#[test]
fn extra_template_matches_jinja2() {
    let fx = fixture();
    let t = template(&fx, "extra_template");
    check(&t, &fx["extra_chat"]);
    // Its raise_exception branch: a clear render error naming the role.
    let e = t
        .render(&[ChatMessage::new("tool", "{}")], true)
        .unwrap_err();
    assert!(
        matches!(&e, LlamaError::ChatTemplate { stage: "render", message } if message.contains("unknown role tool")),
        "{e}"
    );
}

#[test]
fn bad_templates_are_typed_errors() {
    let e = ChatTemplate::new("{% for m in messages %}{{ m }", "", "").unwrap_err();
    assert!(
        matches!(&e, LlamaError::ChatTemplate { stage: "parse", .. }),
        "{e}"
    );
    let t = ChatTemplate::new("{{ messages[0]['content'] | nosuchfilter }}", "", "");
    assert!(
        t.is_err()
            || t.unwrap()
                .render(&[ChatMessage::new("user", "x")], true)
                .is_err()
    );
    // Endless work is cut off with an error, not a hang.
    let t = ChatTemplate::new(
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "",
        "",
    )
    .unwrap();
    let e = t.render(&[], true).unwrap_err();
    assert!(
        matches!(
            &e,
            LlamaError::ChatTemplate {
                stage: "render",
                ..
            }
        ),
        "{e}"
    );
    // A file without a template has none (the tiny test model).
    let r = GgufReader::new(&include_bytes!("fixtures/tiny_llama.gguf")[..]).unwrap();
    let tk = Tokenizer::from_gguf(r.metadata()).unwrap();
    assert!(ChatTemplate::from_gguf(r.metadata(), &tk)
        .unwrap()
        .is_none());
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn smollm2_gguf_template_matches_jinja2() {
    let root = std::env::var_os("RLX_MODELS").expect("RLX_MODELS (tools/fetch_models.sh)");
    let path = std::path::Path::new(&root).join("gguf/SmolLM2-135M-Instruct.Q4_1.gguf");
    let r = GgufReader::open(path).unwrap();
    let tk = Tokenizer::from_gguf(r.metadata()).unwrap();
    let t = ChatTemplate::from_gguf(r.metadata(), &tk).unwrap().unwrap();
    check(&t, &fixture()["chat"]);
}
