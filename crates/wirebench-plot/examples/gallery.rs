//! Renders one figure of each kind and a sample report into OUTDIR (default
//! `target/wirebench-plot-gallery`), then screenshots each with headless Chromium.
//!
//! `cargo run -p wirebench-plot --example gallery -- OUTDIR`

use std::path::PathBuf;

use wirebench_plot::browser::{check_page, Chromium};
use wirebench_plot::{gallery, Render, Svg};

fn page(title: &str, svg: &Svg) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{margin:0;background:#fff}}</style></head><body>{}</body></html>",
        wirebench_plot::svg::escape(title),
        svg
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/wirebench-plot-gallery"));
    std::fs::create_dir_all(&out)?;
    let figs: Vec<(&str, Svg)> = vec![
        ("sweep", gallery::sweep().render_svg()?),
        ("two_axes", gallery::two_axes().render_svg()?),
        ("cpu_bars", gallery::cpu_bars().render_svg()?),
        ("ladder", gallery::ladder().render_svg()?),
        ("histogram", gallery::histogram().render_svg()?),
        ("panels", gallery::panels().render_svg()?),
        ("boxes", gallery::boxes().render_svg()?),
    ];
    let browser = Chromium::find()?;
    for (name, svg) in &figs {
        std::fs::write(out.join(format!("{name}.svg")), svg.as_str())?;
        let html = out.join(format!("{name}.html"));
        std::fs::write(&html, page(name, svg))?;
        let b = browser.clone().with_window(820, 920);
        let check = check_page(&b, &html, &out.join(format!("{name}.png")))?;
        println!(
            "{name}: {:.1} % drawn, console {:?}",
            check.ink.fraction * 100.0,
            check.run.console
        );
    }
    Ok(())
}
