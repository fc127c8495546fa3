//! o200k's pattern on ASCII text, matched by hand: the pieces tiktoken's regular expression
//! splits such text into, without compiling the expression (22 M instructions, most of what a
//! status-line turn cost) or running its backtracking engine on each text.
//!
//! The pattern's alternatives, tried in order at each place (leftmost first, as the regex
//! engine does), with what they mean on ASCII bytes (`\p{L}` is `A-Za-z`, `\p{Lu}` `A-Z`,
//! `\p{Ll}` `a-z`, the other letter and mark classes hold no ASCII, `\p{N}` is `0-9`, `\s` is
//! `\t \n \v \f \r` and space):
//!
//! 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
//! 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}…]+[\p{Ll}…]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
//! 3. `\p{N}{1,3}`
//! 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
//! 5. `\s*[\r\n]+`
//! 6. `\s+(?!\S)`
//! 7. `\s+`
//!
//! Every byte starts some alternative's match (a letter 1 or 2, a digit 3, punctuation 4, a
//! space 5 to 7), so the pieces cover the text. The tests compare the pieces with the regular
//! expression's own on every ASCII byte in random mixtures.

/// Calls `piece` with each piece of `text`, which must be ASCII, in order.
pub fn split(text: &[u8], mut piece: impl FnMut(&[u8])) {
    let mut at = 0;
    while at < text.len() {
        let end = letters(text, at)
            .or_else(|| digits(text, at))
            .or_else(|| punctuation(text, at))
            .unwrap_or_else(|| spaces(text, at));
        piece(&text[at..end]);
        at = end;
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// `[^\s\p{L}\p{N}]`: punctuation, symbols, and control bytes that are not spaces.
fn is_punctuation(b: u8) -> bool {
    !is_space(b) && !b.is_ascii_alphanumeric()
}

/// Where the run of bytes from `from` that `is` holds for ends.
fn run(text: &[u8], from: usize, is: impl Fn(u8) -> bool) -> usize {
    from + text[from..].iter().take_while(|&&b| is(b)).count()
}

/// Alternatives 1 and 2. The optional lead (`[^\r\n\p{L}\p{N}]?`) is taken whenever the byte
/// allows it: without it the match would have to start with that same byte as a letter.
fn letters(text: &[u8], at: usize) -> Option<usize> {
    let lead = !matches!(text[at], b'\r' | b'\n') && !text[at].is_ascii_alphanumeric();
    let from = at + usize::from(lead);
    let upper = run(text, from, |b| b.is_ascii_uppercase());
    let lower = run(text, upper, |b| b.is_ascii_lowercase());
    // 1 needs a lower-case letter (the upper-case run cannot give one back); 2 an upper-case.
    (lower > upper || upper > from).then(|| contraction(text, lower))
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `at`: where it ends (at `at` when there is none).
fn contraction(text: &[u8], at: usize) -> usize {
    if text.get(at) != Some(&b'\'') {
        return at;
    }
    let rest = &text[at + 1..];
    ["s", "t", "re", "ve", "m", "ll", "d"]
        .iter()
        .find(|c| rest.len() >= c.len() && rest[..c.len()].eq_ignore_ascii_case(c.as_bytes()))
        .map_or(at, |c| at + 1 + c.len())
}

/// Alternative 3: up to three digits.
fn digits(text: &[u8], at: usize) -> Option<usize> {
    text[at].is_ascii_digit().then(|| run(text, at, |b| b.is_ascii_digit()).min(at + 3))
}

/// Alternative 4: an optional space, punctuation, then line ends and slashes.
fn punctuation(text: &[u8], at: usize) -> Option<usize> {
    let from = if text[at] == b' ' && text.get(at + 1).is_some_and(|&b| is_punctuation(b)) { at + 1 } else { at };
    is_punctuation(text[from]).then(|| {
        let end = run(text, from, is_punctuation);
        run(text, end, |b| matches!(b, b'\r' | b'\n' | b'/'))
    })
}

/// Alternatives 5 to 7, at a space (every other byte starts an earlier one).
fn spaces(text: &[u8], at: usize) -> usize {
    let end = run(text, at, is_space);
    // 5: the greedy `\s*` gives back spaces until a line end follows; `[\r\n]+` then takes
    // that one alone (none follows it within the run).
    if let Some(last) = text[at..end].iter().rposition(|&b| matches!(b, b'\r' | b'\n')) {
        return at + last + 1;
    }
    // 6: a run at the end of the text; otherwise the run less its last space, which must then
    // lead the next piece (`(?!\S)` holds before a space).
    if end == text.len() {
        end
    } else if end - at >= 2 {
        end - 1
    } else {
        end // 7
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regex_pieces(text: &str) -> Vec<String> {
        static PATTERN: std::sync::OnceLock<fancy_regex::Regex> = std::sync::OnceLock::new();
        let pattern = PATTERN.get_or_init(|| fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).unwrap());
        pattern.find_iter(text).map(|m| m.unwrap().as_str().to_string()).collect()
    }

    fn pieces(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        split(text.as_bytes(), |p| out.push(String::from_utf8(p.to_vec()).unwrap()));
        out
    }

    #[test]
    fn pieces_are_the_patterns_on_every_ascii_byte() {
        let cases = [
            "hello world",
            "It's DON'T we'll they'RE I'm you'd 'S x'LL",
            "HELLOworld helloWorld ABC's A'",
            "   leading\tand trailing   ",
            "line one\nline two\r\n\r\n\n  indented\n\t\ttabs\n  ",
            "12345678901 3.14159 1e-10 0x1F",
            "a/b/c/ ?!...\n/// ---\n\n .hidden ./run -flag --long=x",
            "fn main() { let x: Vec<u8> = vec![0; 16]; }\n",
            "\x00\x01\x1b[31mred\x1b[0m\x7f\x0b\x0c\x1c\x1d\x1e\x1f",
            "",
            " ",
            "\n",
            "x",
        ];
        for text in cases {
            assert_eq!(pieces(text), regex_pieces(text), "{text:?}");
        }
        // Random mixtures of every ASCII byte, weighted to the classes' borders.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let common = b"aAzZsStTdDlLmMvVrReE09 '\t\n\r/.-_";
        for round in 0..20_000 {
            let len = 1 + (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| {
                    let r = next();
                    let byte = if r % 3 == 0 { (r >> 8) as u8 % 128 } else { common[(r >> 8) as usize % common.len()] };
                    byte as char
                })
                .collect();
            assert_eq!(pieces(&text), regex_pieces(&text), "round {round}: {text:?}");
        }
    }
}
