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
    let report = out.join("report.html");
    std::fs::write(&report, gallery::sample_report()?.to_html())?;
    let check = check_page(&browser, &report, &out.join("report.png"))?;
    println!(
        "report: {:.1} % drawn, console {:?}",
        check.ink.fraction * 100.0,
        check.run.console
    );
    // The whole page in one tall screenshot.
    let tall = browser.clone().with_window(1000, 9000);
    let check = check_page(&tall, &report, &out.join("report-full.png"))?;
    println!("report (full): {:.1} % drawn", check.ink.fraction * 100.0);
    let tiles = split_tall(&out.join("report-full.png"), 1400)?;
    println!("report tiles: {tiles}");
    Ok(())
}

/// Cuts a tall screenshot into tiles of `tile_h` rows (`NAME-1.png`, …) so each can be looked
/// at in an image viewer; stops at the last row that is not plain background.
fn split_tall(
    png_path: &std::path::Path,
    tile_h: u32,
) -> Result<usize, Box<dyn std::error::Error>> {
    let mut dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_path)?));
    dec.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = dec.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or("image too large")?];
    let info = reader.next_frame(&mut buf)?;
    let ch = info.color_type.samples();
    let row = info.width as usize * ch;
    let bg = buf[..ch].to_vec();
    let last = (0..info.height as usize)
        .rev()
        .find(|&y| {
            buf[y * row..(y + 1) * row]
                .chunks(ch)
                .any(|p| p != bg.as_slice())
        })
        .unwrap_or(0) as u32;
    let mut n = 0;
    let mut y0 = 0;
    while y0 <= last {
        let h = tile_h.min(last + 1 - y0 + 20).min(info.height - y0);
        n += 1;
        let name = png_path.with_file_name(format!(
            "{}-{n}.png",
            png_path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("tile")
        ));
        let mut enc = png::Encoder::new(
            std::io::BufWriter::new(std::fs::File::create(name)?),
            info.width,
            h,
        );
        enc.set_color(info.color_type);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header()?;
        w.write_image_data(&buf[y0 as usize * row..(y0 + h) as usize * row])?;
        y0 += tile_h;
    }
    Ok(n)
}
