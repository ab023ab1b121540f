//! The training curve as a PNG: loss (top, red) and test accuracy (bottom,
//! blue) per epoch, drawn without text so no system fonts are needed.

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::path::Path;

/// Plot size in pixels.
const SIZE: (u32, u32) = (800, 600);

/// Draws `values` (one per epoch) as a polyline in `area`, scaled to
/// `0..=top`, with its axes.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    values: &[f32],
    top: f32,
    color: RGBColor,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let epochs = values.len().max(2) as f32;
    let mut chart = ChartBuilder::on(area)
        .margin(20)
        .build_cartesian_2d(0f32..epochs, 0f32..top)
        .map_err(|e| anyhow!("plot: {e}"))?;
    let axes = [(0.0, top), (0.0, 0.0), (epochs, 0.0)];
    chart
        .draw_series(std::iter::once(PathElement::new(axes.to_vec(), BLACK)))
        .map_err(|e| anyhow!("plot: {e}"))?;
    // Grid lines at every tenth of the range.
    for i in 1..10 {
        let y = top * i as f32 / 10.0;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, y), (epochs, y)],
                RGBColor(225, 225, 225),
            )))
            .map_err(|e| anyhow!("plot: {e}"))?;
    }
    chart
        .draw_series(LineSeries::new(
            values.iter().enumerate().map(|(i, &v)| ((i + 1) as f32, v)),
            color.stroke_width(3),
        ))
        .map_err(|e| anyhow!("plot: {e}"))?;
    Ok(())
}

/// Writes the curve of `loss` and `accuracy` (0..1) per epoch to `path`.
pub fn training_curve(path: &Path, loss: &[f32], accuracy: &[f32]) -> Result<()> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
    let (upper, lower) = root.split_vertically(SIZE.1 / 2);
    let max_loss = loss.iter().copied().fold(0f32, f32::max).max(1e-6) * 1.05;
    panel(&upper, loss, max_loss, RED)?;
    panel(&lower, accuracy, 1.0, BLUE)?;
    root.present()
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(())
}
