//! `$readmemh` files: one two's-complement hex word per line.

/// The `.mem` text of `values` as `width`-bit words.
pub(crate) fn mem_text(values: impl IntoIterator<Item = i64>, width: u32) -> String {
    let digits = width.div_ceil(4) as usize;
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let mut s = String::new();
    for v in values {
        s.push_str(&format!("{:0digits$x}\n", (v as u64) & mask));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::mem_text;

    #[test]
    fn twos_complement_words() {
        assert_eq!(mem_text([-1, 5, -128], 8), "ff\n05\n80\n");
        assert_eq!(mem_text([-2], 32), "fffffffe\n");
    }
}
