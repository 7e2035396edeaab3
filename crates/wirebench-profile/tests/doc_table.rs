//! docs/PROFILE.md shows the classification table the code uses.
//! Regenerate with `WIREBENCH_BLESS=1 cargo test -p wirebench-profile --test main doc_table::`.

const BEGIN: &str = "<!-- classification table: generated, do not edit -->\n";
const END: &str = "<!-- end of classification table -->";

#[test]
fn profile_doc_table_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/PROFILE.md");
    let doc = std::fs::read_to_string(path).expect("reading docs/PROFILE.md");
    let start = doc.find(BEGIN).expect("begin marker") + BEGIN.len();
    let end = doc.find(END).expect("end marker");
    let table = wirebench_profile::classify::table_markdown();
    if std::env::var_os("WIREBENCH_BLESS").is_some_and(|v| v == "1") {
        let new = format!("{}{}{}", &doc[..start], table, &doc[end..]);
        std::fs::write(path, new).expect("writing docs/PROFILE.md");
        return;
    }
    assert!(
        doc[start..end] == table,
        "docs/PROFILE.md's table is out of date with classify::KERNEL_RULES; regenerate with \
         `WIREBENCH_BLESS=1 cargo test -p wirebench-profile --test main doc_table::`"
    );
}
