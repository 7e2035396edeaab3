//! A real browser: Debian's headless Chromium loads the sample report and single figures;
//! the screenshots must be drawn (not blank), show the palette colours of the series, and the
//! page must log nothing to the console. Negative controls prove the checker can fail.
//! Chromium is required: these tests fail (they do not skip) when it is missing.

use std::path::{Path, PathBuf};

use wirebench_plot::browser::{check_page, ink, Chromium};
use wirebench_plot::{gallery, Render};

fn chromium() -> Chromium {
    Chromium::find().unwrap_or_else(|e| panic!("capability missing: {e}"))
}

/// A fresh directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "wirebench-plot-test-{tag}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn sample_report_renders_cleanly_in_chromium() {
    let dir = TempDir::new("report");
    let page = dir.path("report.html");
    let html = gallery::sample_report().expect("report").to_html();
    std::fs::write(&page, html).expect("write report");
    let check = check_page(&chromium(), &page, &dir.path("report.png")).expect("chromium run");
    eprintln!(
        "report screenshot {}x{}: {:.1} % drawn, background {:?}, {} console messages, {:?}",
        check.ink.width_px,
        check.ink.height_px,
        check.ink.fraction * 100.0,
        check.ink.background_rgb,
        check.run.console.len(),
        check.run.elapsed
    );
    assert_eq!((check.ink.width_px, check.ink.height_px), (1000, 1400));
    assert_eq!(check.ink.background_rgb, (255, 255, 255));
    let problems = check.problems(0.05);
    assert!(problems.is_empty(), "report problems: {problems:#?}");
    // The whole page, tall: every figure is below the first screen.
    let tall = chromium().with_window(1000, 9000);
    let full = check_page(&tall, &page, &dir.path("full.png")).expect("chromium run");
    assert!(full.problems(0.03).is_empty(), "{:#?}", full.problems(0.03));
}

/// Pixels within 40 of `rgb` in every channel.
fn count_colour(png_path: &Path, rgb: (u8, u8, u8)) -> usize {
    let mut dec = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).expect("open png"),
    ));
    dec.set_transformations(png::Transformations::normalize_to_color8());
    let mut r = dec.read_info().expect("png header");
    let mut buf = vec![0; r.output_buffer_size().expect("size")];
    let info = r.next_frame(&mut buf).expect("png frame");
    let ch = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks_exact(ch)
        .filter(|p| {
            p[0].abs_diff(rgb.0) <= 40 && p[1].abs_diff(rgb.1) <= 40 && p[2].abs_diff(rgb.2) <= 40
        })
        .count()
}

#[test]
fn series_colours_reach_the_screen() {
    let dir = TempDir::new("figure");
    let svg = gallery::sweep().render_svg().expect("render");
    let page = dir.path("sweep.html");
    std::fs::write(
        &page,
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"/><title>t</title></head>\
             <body style=\"margin:0\">{}</body></html>",
            svg.inline_html()
        ),
    )
    .expect("write");
    let b = chromium().with_window(820, 500);
    let check = check_page(&b, &page, &dir.path("sweep.png")).expect("chromium run");
    assert!(
        check.problems(0.02).is_empty(),
        "{:#?}",
        check.problems(0.02)
    );
    // Blue (#0072b2) and vermillion (#d55e00) series: lines and 21 markers each.
    let blue = count_colour(&check.run.png, (0x00, 0x72, 0xb2));
    let red = count_colour(&check.run.png, (0xd5, 0x5e, 0x00));
    eprintln!(
        "blue px {blue}, vermillion px {red}, ink {:.3}",
        check.ink.fraction
    );
    assert!(
        blue > 500 && red > 500,
        "series not drawn: blue {blue}, vermillion {red}"
    );
}

#[test]
fn checker_catches_console_messages_and_blank_pages() {
    let dir = TempDir::new("negative");
    let noisy = dir.path("noisy.html");
    std::fs::write(
        &noisy,
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"/>\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{}\"/></head><body>\
             <p>text</p><img src=\"forbidden.png\"/></body></html>",
            wirebench_plot::html::CSP
        ),
    )
    .expect("write");
    let run = chromium()
        .screenshot(&noisy, &dir.path("noisy.png"))
        .expect("chromium run");
    assert!(
        run.console
            .iter()
            .any(|m| m.contains("Content Security Policy")),
        "CSP violation not seen: {:?}",
        run.console
    );
    let blank = dir.path("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").expect("write");
    let check = check_page(&chromium(), &blank, &dir.path("blank.png")).expect("chromium run");
    assert!(
        check.ink.fraction < 0.001,
        "blank page has ink {}",
        check.ink.fraction
    );
    assert_eq!(check.problems(0.05).len(), 1);
    let again = ink(&check.run.png).expect("decode");
    assert_eq!(again.fraction, check.ink.fraction);
}

#[test]
fn figure_rasterises_to_png_at_its_size() {
    let dir = TempDir::new("png");
    let svg = gallery::histogram().render_svg().expect("render");
    let png = dir.path("histogram.png");
    let run = chromium().svg_to_png(&svg, &png).expect("chromium run");
    assert!(run.console.is_empty(), "{:?}", run.console);
    let ink = ink(&png).expect("decode");
    assert_eq!((ink.width_px, ink.height_px), svg.size_px().expect("size"));
    assert!(
        ink.fraction > 0.03,
        "histogram PNG nearly blank: {}",
        ink.fraction
    );
}
