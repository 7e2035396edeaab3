//! The report page: well-formed, self-contained (no URL, no script, no external load), every
//! text escaped, outcomes readable without colour.

use wirebench_plot::gallery;
use wirebench_plot::html::*;

fn sample() -> String {
    gallery::sample_report().expect("sample report").to_html()
}

fn xml(html: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(html, opts)
        .unwrap_or_else(|e| panic!("report is not well-formed: {e}"))
}

#[test]
fn report_is_self_contained() {
    let html = sample();
    let lower = html.to_lowercase();
    // The only "http" is the CSP meta tag's `http-equiv` attribute name.
    assert_eq!(
        lower.matches("http").count(),
        lower.matches("http-equiv").count(),
        "a URL in the report"
    );
    assert_eq!(lower.matches("http-equiv").count(), 1);
    assert!(!lower.contains("://"), "a URL in the report");
    assert!(!lower.contains("<script"), "a script in the report");
    assert!(!lower.contains("<link"), "a link element in the report");
    assert!(!lower.contains("@import") && !lower.contains("@font-face"));
    for (i, _) in lower.match_indices("src=") {
        assert!(
            lower[i..].starts_with("src=\"data:"),
            "src= to something but data:"
        );
    }
    for (i, _) in lower.match_indices("url(") {
        assert!(
            lower[i..].starts_with("url(#"),
            "url( to something but a fragment"
        );
    }
    for (i, _) in lower.match_indices("href=") {
        assert!(
            lower[i..].starts_with("href=\"#"),
            "href to something but a fragment"
        );
    }
    assert!(html.contains(CSP), "CSP meta missing");
}

#[test]
fn report_structure() {
    let html = sample();
    let doc = xml(&html);
    let count = |tag: &str| doc.descendants().filter(|n| n.has_tag_name(tag)).count();
    assert_eq!(count("section"), 4);
    assert_eq!(count("svg"), 7, "one inline SVG per figure");
    assert_eq!(count("figure"), 7);
    assert_eq!(count("figcaption"), 7);
    assert_eq!(count("pre"), 1);
    // Table of contents links to every section id.
    let ids: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("section"))
        .filter_map(|n| n.attribute("id"))
        .collect();
    let hrefs: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("href"))
        .collect();
    assert_eq!(hrefs.len(), ids.len());
    for (h, id) in hrefs.iter().zip(&ids) {
        assert_eq!(h.trim_start_matches('#'), *id);
    }
    // Numeric columns right-aligned by class, units in headers.
    let nums = doc
        .descendants()
        .filter(|n| n.has_tag_name("td") && n.attribute("class") == Some("num"))
        .count();
    assert_eq!(nums, 9);
    assert!(html.contains("<span class=\"unit\">(Gbit/s)</span>"));
    // The differing MTU row is marked, the equal kernel row is not.
    let differs: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("tr") && n.attribute("class") == Some("differs"))
        .map(|n| n.descendants().filter_map(|d| d.text()).collect::<String>())
        .collect();
    assert_eq!(differs.len(), 1);
    assert!(differs[0].starts_with("MTU"));
}

#[test]
fn outcomes_have_symbols_and_words() {
    let html = sample();
    for (sym, word) in [
        ("✓", "holds"),
        ("✗", "does not hold"),
        ("?", "inconclusive"),
    ] {
        assert!(
            html.contains(&format!("<span class=\"sym\">{sym}</span> {word}</td>")),
            "{word} without its symbol"
        );
    }
    assert!(html.contains("Expectations: 1 of 3 hold"));
    assert!(html.contains("class=\"verdict holds\""));
}

#[test]
fn every_string_is_escaped() {
    let nasty = "<script>alert('x')</script> \"q\" & \u{0}\u{1b}[31m\u{85}";
    let kv = KeyValueTable {
        caption: nasty.into(),
        columns: vec![nasty.into(), "b".into()],
        rows: vec![(nasty.into(), vec![nasty.into(), nasty.into()])],
    };
    let mut s = Section::new(nasty);
    s.push(Block::Heading(nasty.into()))
        .push(Block::Paragraph(nasty.into()))
        .push(Block::KeyValue(kv))
        .push(Block::Table(DataTable {
            caption: nasty.into(),
            columns: vec![Column::num(nasty, nasty), Column::text(nasty)],
            rows: vec![vec![nasty.into(), nasty.into()]],
        }))
        .push(Block::Code {
            caption: nasty.into(),
            code: nasty.into(),
        })
        .push(Block::Warnings(vec![nasty.into()]))
        .push(Block::Verdict(Verdict {
            outcome: Outcome::DoesNotHold,
            headline: nasty.into(),
            detail: nasty.into(),
        }))
        .push(Block::Expectations(vec![Expectation {
            statement: nasty.into(),
            outcome: Outcome::Holds,
            evidence: nasty.into(),
        }]));
    let r = Report {
        title: nasty.into(),
        subtitle: nasty.into(),
        sections: vec![s.clone(), s.clone(), s],
    };
    let html = r.to_html();
    assert!(!html.contains("<script"), "unescaped markup");
    assert!(
        !html
            .chars()
            .any(|c| (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r'),
        "a control character got through"
    );
    assert!(!html.contains('\u{85}'));
    let doc = xml(&html);
    let expected = "<script>alert('x')</script> \"q\" & \u{fffd}\u{fffd}[31m\u{fffd}";
    let h1 = doc
        .descendants()
        .find(|n| n.has_tag_name("h1"))
        .and_then(|n| n.text());
    assert_eq!(h1, Some(expected));
    // Every place the string went in comes out as the same text.
    let n = doc
        .descendants()
        .filter(|n| n.is_text() && n.text().is_some_and(|t| t.contains(expected)))
        .count();
    assert!(n >= 3 * 14, "escaped string found {n} times");
}
