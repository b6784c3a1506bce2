//! record-slowdown.svg: a grouped bar chart of record slowdown, drawn with plotters' SVG
//! backend.

use super::tables::{median_secs, ratio};
use super::{Program, Run};
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;

/// Bar colours of the strategies, in order (floor and tsan have their own greys).
const PALETTE: &[RGBColor] = &[
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
];

/// Pixel sizes: a bar, the gap between programs, the legend's width, the plot's height and
/// the room under it for the program names.
const BAR_W: f64 = 12.0;
const GAP: f64 = 16.0;
const LEGEND_W: u32 = 170;
const PLOT_H: u32 = 360;
const LABELS_H: u32 = 110;

/// One bar per program: its legend label, its strategy (empty for floor and tsan) and colour.
struct Series {
    label: String,
    strategy: String,
    color: RGBColor,
}

/// Grouped bar chart of record slowdown (log scale): per program, the floor and tsan for
/// reference, then each available strategy.
pub(super) fn svg(
    programs: &[Program],
    strategies: &[String],
    unavailable: &BTreeMap<String, String>,
    runs: &[Run],
) -> Result<String> {
    let mut series = vec![
        Series {
            label: "floor".into(),
            strategy: String::new(),
            color: RGBColor(0xba, 0xb0, 0xac),
        },
        Series {
            label: "tsan".into(),
            strategy: String::new(),
            color: RGBColor(0x9c, 0x75, 0x5f),
        },
    ];
    for (i, st) in strategies
        .iter()
        .filter(|s| !unavailable.contains_key(*s))
        .enumerate()
    {
        series.push(Series {
            label: format!("record {st}"),
            strategy: st.clone(),
            color: PALETTE[i % PALETTE.len()],
        });
    }
    // values[program][series]: record (or floor, tsan) / native.
    let values: Vec<Vec<Option<f64>>> = programs
        .iter()
        .map(|p| {
            let native = median_secs(runs, &p.name, "native", "");
            series
                .iter()
                .map(|s| {
                    let config = if s.strategy.is_empty() {
                        &s.label
                    } else {
                        "record"
                    };
                    ratio(median_secs(runs, &p.name, config, &s.strategy), native)
                        .filter(|v| *v > 0.0)
                })
                .collect()
        })
        .collect();
    let names: Vec<&str> = programs.iter().map(|p| p.name.as_str()).collect();
    let mut buf = String::new();
    draw(&mut buf, &names, &series, &values).map_err(|e| anyhow!("cannot draw the chart: {e}"))?;
    Ok(buf)
}

/// Draw the chart into `buf`: program `i`'s bars are centred on x = i.
fn draw(
    buf: &mut String,
    names: &[&str],
    series: &[Series],
    values: &[Vec<Option<f64>>],
) -> Result<(), Box<dyn std::error::Error>> {
    let all = values.iter().flatten().flatten().copied();
    let lo_exp = all.clone().fold(1.0f64, f64::min).log10().floor() as i32;
    let hi_exp = (all.fold(10.0f64, f64::max).log10().ceil() as i32).max(lo_exp + 1);
    let (lo, hi) = (10f64.powi(lo_exp), 10f64.powi(hi_exp));

    let group_w = BAR_W * series.len() as f64 + GAP;
    let n = names.len().max(1);
    let plot_w = 70 + (group_w * n as f64) as u32;
    let root = SVGBackend::with_string(buf, (plot_w + LEGEND_W, 40 + PLOT_H + LABELS_H))
        .into_drawing_area();
    root.fill(&WHITE)?;
    let (plot, legend) = root.split_horizontally(plot_w);
    let mut chart = ChartBuilder::on(&plot)
        .margin_top(40)
        .x_label_area_size(LABELS_H)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, (lo..hi).log_scale())?;
    let times = |v: &f64| {
        if *v >= 1.0 {
            format!("{v:.0}×")
        } else {
            format!("{v}×")
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .x_labels(0)
        .label_style(("sans-serif", 11))
        .y_label_formatter(&times)
        .draw()?;

    let (bar, gap) = (BAR_W / group_w, GAP / group_w);
    chart.draw_series(values.iter().enumerate().flat_map(|(i, row)| {
        row.iter().enumerate().filter_map(move |(j, v)| {
            let x0 = i as f64 - 0.5 + gap / 2.0 + bar * j as f64;
            let c = series[j].color;
            v.map(|v| Rectangle::new([(x0, lo), (x0 + bar * 11.0 / 12.0, v)], c.filled()))
        })
    }))?;

    root.draw(&Text::new(
        "Record slowdown (run time / native, log scale)",
        (70, 12),
        ("sans-serif", 14),
    ))?;
    // The program names, written downwards under their groups (plotters' rotated axis labels
    // are centred on the axis, over the ticks).
    let name_style = ("sans-serif", 11)
        .into_font()
        .transform(FontTransform::Rotate90)
        .into_text_style(&root)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64, lo));
        root.draw(&Text::new(name.to_string(), (x, y + 8), name_style.clone()))?;
    }
    let text = ("sans-serif", 11)
        .into_font()
        .into_text_style(&legend)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (j, s) in series.iter().enumerate() {
        let y = 40 + 18 * j as i32;
        legend.draw(&Rectangle::new([(10, y), (22, y + 12)], s.color.filled()))?;
        legend.draw(&Text::new(s.label.clone(), (28, y + 6), text.clone()))?;
    }
    root.present()?;
    Ok(())
}
