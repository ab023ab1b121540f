//! [`NamePattern`]: shell-style globs over tensor names (`*` any run of
//! characters, `?` one character, everything else literal).

/// A glob over tensor names: `*` matches any run of characters (dots
/// included), `?` exactly one, every other character itself.
///
/// ```
/// use rlx_gguf_convert::NamePattern;
/// let p = NamePattern::new("blk.*.attn_?.weight");
/// assert!(p.matches("blk.11.attn_q.weight"));
/// assert!(!p.matches("blk.11.attn_qkv.weight"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    glob: Vec<char>,
    text: String,
}

impl NamePattern {
    /// A pattern from its text.
    pub fn new(glob: &str) -> NamePattern {
        NamePattern {
            glob: glob.chars().collect(),
            text: glob.to_string(),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `text` contains a wildcard (`*` or `?`).
    pub fn is_glob(text: &str) -> bool {
        text.contains(['*', '?'])
    }

    /// Whether the whole of `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        // Iterative matcher with one backtrack point (the last `*`): linear
        // in practice and never recursive, so hostile patterns cannot blow
        // the stack.
        let name: Vec<char> = name.chars().collect();
        let (mut p, mut n) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            match self.glob.get(p) {
                Some('*') => {
                    star = Some((p, n));
                    p += 1;
                }
                Some(&c) if c == '?' || c == name[n] => {
                    p += 1;
                    n += 1;
                }
                _ => match star {
                    Some((sp, sn)) => {
                        p = sp + 1;
                        n = sn + 1;
                        star = Some((sp, sn + 1));
                    }
                    None => return false,
                },
            }
        }
        self.glob[p..].iter().all(|&c| c == '*')
    }
}

#[cfg(test)]
mod tests {
    use super::NamePattern;

    #[test]
    fn globs_match_whole_names() {
        let cases = [
            ("*", "anything.at.all", true),
            ("*", "", true),
            ("", "", true),
            ("", "a", false),
            ("a*b", "ab", true),
            ("a*b", "axxb", true),
            ("a*b", "axxbc", false),
            ("*.weight", "blk.0.ffn.weight", true),
            ("*.weight", "blk.0.ffn.bias", false),
            ("blk.?.x", "blk.1.x", true),
            ("blk.?.x", "blk.10.x", false),
            ("*norm*", "blk.3.attn_norm.weight", true),
            ("a*a*a", "aaa", true),
            ("a*a*a", "aa", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ];
        for (glob, name, want) in cases {
            assert_eq!(
                NamePattern::new(glob).matches(name),
                want,
                "{glob} vs {name}"
            );
        }
    }
}
