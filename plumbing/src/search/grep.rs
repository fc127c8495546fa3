//! `shake grep`'s engine: ripgrep's own matcher and searcher (the `grep-regex`, `grep-searcher`
//! and `grep-matcher` crates) over a session's readable text ([`super::Readable`]), each
//! matching line kept with the file line it came from and where the pattern matched in it.

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkMatch};

use super::Readable;
use super::{Result, SearchError};

/// How the pattern is read: as ripgrep's `-i`, `-S`, `-F`, `-w`.
#[derive(Clone, Copy, Debug, Default)]
pub struct How {
    /// Case does not matter.
    pub ignore_case: bool,
    /// Case does not matter unless the pattern holds an upper-case letter.
    pub smart_case: bool,
    /// The pattern is a plain string, not a regular expression.
    pub fixed: bool,
    /// The match must be a whole word.
    pub word: bool,
}

/// Builds the matcher for `pattern` read as `how` says; a pattern that is not a regular
/// expression is the user's error, naming it.
pub fn matcher(pattern: &str, how: How) -> Result<RegexMatcher> {
    RegexMatcherBuilder::new()
        .case_insensitive(how.ignore_case)
        .case_smart(how.smart_case)
        .fixed_strings(how.fixed)
        .word(how.word)
        // Lines of text end with `\n`: a match never spans two.
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|source| SearchError::NotAPattern { pattern: pattern.to_string(), source })
}

/// One matching line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The session file's line (1-based) the text came from: its entry.
    pub line: u32,
    /// The line of text, without its `\n`.
    pub text: Vec<u8>,
    /// Where the pattern matched in `text`, in order.
    pub spans: Vec<(usize, usize)>,
}

/// Every line of `readable`'s text that `matcher` matches, at most `max` (`None`: all).
pub fn search(matcher: &RegexMatcher, readable: &Readable, max: Option<usize>) -> Vec<Hit> {
    let mut sink = Hits { matcher, readable, hits: Vec::new(), max };
    let mut searcher: Searcher = SearcherBuilder::new().line_number(false).build();
    // The text is in memory and the sink fails on nothing: the search cannot fail.
    let _ = searcher.search_slice(matcher, &readable.text, &mut sink);
    sink.hits
}

struct Hits<'m> {
    matcher: &'m RegexMatcher,
    readable: &'m Readable,
    hits: Vec<Hit>,
    max: Option<usize>,
}

impl Sink for Hits<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> std::result::Result<bool, std::io::Error> {
        let bytes = mat.bytes();
        let text = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let offset = usize::try_from(mat.absolute_byte_offset()).unwrap_or(usize::MAX);
        let mut spans = Vec::new();
        // The matcher's own search over the one line: where to colour it, and `--json`'s spans.
        let _ = self.matcher.find_iter(text, |m| {
            spans.push((m.start(), m.end()));
            true
        });
        self.hits.push(Hit { line: self.readable.line_at(offset), text: text.to_vec(), spans });
        Ok(self.max.is_none_or(|max| self.hits.len() < max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lines_in_the_text_not_the_json() {
        let raw = b"{\"text\":\"say \\\"hello\\\"\\nand then\"}\n{\"text\":\"HELLO again\"}\n";
        let r = Readable::of(raw);
        let m = matcher("\"hello\"", How::default()).unwrap();
        let hits = search(&m, &r, None);
        assert_eq!(hits, [Hit { line: 1, text: b"say \"hello\"".to_vec(), spans: vec![(4, 11)] }]);
        let m = matcher("hello", How { ignore_case: true, ..How::default() }).unwrap();
        assert_eq!(search(&m, &r, None).iter().map(|h| h.line).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(search(&m, &r, Some(1)).len(), 1);
        assert!(matcher("(", How::default()).unwrap_err().to_string().contains("not a pattern"));
    }
}
