//! The span finder: fenced blocks and top-level XML spans in a text, found line by line as
//! oh-my-pi's `collectShakeRegions` does (`spec/peer-rules.md` §2(a)): conservatively (an
//! unterminated fence yields nothing, only the outermost span counts).

use std::ops::Range;

/// A fenced or XML block found in a text: its byte range and its label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// From the start of the opening line to the end of the closing line (newline excluded).
    pub range: Range<usize>,
    /// The fence's info string (first word; `code` when empty) or the XML tag.
    pub label: String,
}

/// Finds the outermost fenced blocks and top-level XML spans in `text` (`spec/peer-rules.md`
/// §2(a)), in document order.
pub fn find_spans(text: &str) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut fence: Option<(usize, String)> = None;
    let mut xml: Vec<(&str, usize)> = Vec::new();
    let mut start = 0;
    for line in text.split('\n') {
        let end = start + line.len();
        let bare = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = bare.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            match fence.take() {
                Some((open, label)) => spans.push(Span { range: open..end, label }),
                None => fence = Some((start, fence_label(&trimmed[3..]))),
            }
        } else if fence.is_none() {
            if let Some(tag) = trimmed.strip_prefix("</").and_then(|t| t.strip_suffix('>')) {
                if xml.last().is_some_and(|(top, _)| *top == tag) {
                    let (_, open) = xml.pop().unwrap_or_default();
                    if xml.is_empty() {
                        spans.push(Span { range: open..end, label: tag.to_string() });
                    }
                }
            } else if let Some(tag) = xml_open(bare) {
                xml.push((tag, start));
            }
        }
        start = end + 1;
    }
    // Keep the outer range where spans overlap (a fence inside an XML span).
    spans.sort_by_key(|s| (s.range.start, std::cmp::Reverse(s.range.end)));
    let mut kept: Vec<Span> = Vec::new();
    for span in spans {
        if kept.last().is_none_or(|k| span.range.start >= k.range.end) {
            kept.push(span);
        }
    }
    kept
}

fn fence_label(info: &str) -> String {
    let word = info.trim_start_matches(['`', '~']).split_whitespace().next().unwrap_or("");
    if word.is_empty() {
        "code".to_string()
    } else {
        word.to_string()
    }
}

/// Matches `^<([a-z_-]+)(?:\s+[^>]*)?>$` and returns the tag.
fn xml_open(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('<')?.strip_suffix('>')?;
    let tag_len = inner.bytes().take_while(|b| b.is_ascii_lowercase() || *b == b'_' || *b == b'-').count();
    if tag_len == 0 {
        return None;
    }
    let (tag, rest) = inner.split_at(tag_len);
    let attrs_ok = rest.is_empty() || (rest.starts_with(char::is_whitespace) && !rest.contains('>'));
    attrs_ok.then_some(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(text: &str) -> Vec<(String, &str)> {
        find_spans(text).into_iter().map(|s| (s.label, &text[s.range])).collect()
    }

    #[test]
    fn fences_toggle_on_any_fence_line() {
        let t = "a\n```python\nx = 1\n```\nb\n  ~~~\ny\n```rust\nz\n";
        assert_eq!(
            labels(t),
            [("python".to_string(), "```python\nx = 1\n```"), ("code".to_string(), "  ~~~\ny\n```rust")]
        );
    }

    #[test]
    fn unterminated_fence_yields_nothing() {
        assert!(find_spans("```\nopen\n").is_empty());
    }

    #[test]
    fn xml_top_level_only_and_strict_open_lines() {
        let t = "<outer a=\"1\">\n<inner>\nx\n</inner>\n  </outer>\n<Bad>\n</Bad>\n <sp>\n</sp>\n<t2>\n</t2>";
        assert_eq!(labels(t), [("outer".to_string(), "<outer a=\"1\">\n<inner>\nx\n</inner>\n  </outer>")]);
    }

    #[test]
    fn fence_inside_xml_keeps_the_xml_span() {
        let t = "<doc>\n```\ncode\n```\n</doc>\n";
        assert_eq!(labels(t), [("doc".to_string(), "<doc>\n```\ncode\n```\n</doc>")]);
    }

    #[test]
    fn xml_inside_fence_is_not_seen_and_open_tag_blocks_later_spans() {
        assert_eq!(labels("```\n<a>\n```\n</a>").len(), 1);
        assert!(find_spans("<a>\n<b>\n</b>\n").is_empty());
    }

    #[test]
    fn crlf_lines() {
        assert_eq!(labels("<a>\r\nx\r\n</a>\r\n"), [("a".to_string(), "<a>\r\nx\r\n</a>\r")]);
    }
}
