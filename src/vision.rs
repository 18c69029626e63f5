//! Images for a vision-capable model (`[provider] vision = true`), the pictures people send
//! (`attach`) and the screenshots tools take (`tools`): at most [`MAX_IMAGES`] per message,
//! each within [`MAX_PIXELS`] (downscaled with the `image` crate, which is built with only
//! the JPEG, PNG and WebP codecs), sent as base64 image parts. The parts live only in the
//! turn's request: stored history keeps the text line that names the file.

use std::io::Cursor;

use base64::Engine;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::{self, FilterType};
use image::{DynamicImage, ImageFormat, ImageReader};

use crate::provider::ImagePart;

/// Images sent with one message; later ones are described only.
pub const MAX_IMAGES: usize = 4;
/// Pixels per image sent (about 1568 × 1568, what vision APIs use without resizing).
pub const MAX_PIXELS: u64 = 1568 * 1568;
/// Larger images are refused before decoding (a decompression bomb stays unopened).
const MAX_DECODE_PIXELS: u64 = 100_000_000;

/// `bytes` as an image part: sent as it is when it fits the budget, else downscaled and
/// re-encoded as JPEG. Anything but JPEG, PNG or WebP is refused.
pub fn image_part(bytes: &[u8]) -> Result<ImagePart, String> {
    let format = image::guess_format(bytes).map_err(|e| e.to_string())?;
    let mime = match format {
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Png => "image/png",
        ImageFormat::WebP => "image/webp",
        _ => return Err("not a JPEG, PNG or WebP image".into()),
    };
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(|e| e.to_string())?;
    let pixels = u64::from(width) * u64::from(height);
    if pixels <= MAX_PIXELS {
        return Ok(part(mime, bytes));
    }
    if pixels > MAX_DECODE_PIXELS {
        return Err(format!("{width}×{height} is too large to open"));
    }
    let image = image::load_from_memory_with_format(bytes, format).map_err(|e| e.to_string())?;
    let scale = (MAX_PIXELS as f64 / pixels as f64).sqrt();
    let (w, h) = (scaled(width, scale), scaled(height, scale));
    // Scaled as 8-bit RGB whatever the source holds (one instance of the filter in the binary
    // instead of one per pixel type) and written by the JPEG encoder directly, not through
    // `image`'s format dispatch, which would link every enabled format's encoder.
    let rgb = match image {
        DynamicImage::ImageRgb8(rgb) => rgb,
        other => other.to_rgb8(),
    };
    let small = imageops::resize(&rgb, w, h, FilterType::Triangle);
    drop(rgb);
    let mut out = Vec::new();
    small
        .write_with_encoder(JpegEncoder::new(&mut out))
        .map_err(|e| e.to_string())?;
    Ok(part("image/jpeg", &out))
}

fn scaled(side: u32, scale: f64) -> u32 {
    ((f64::from(side) * scale).floor() as u32).max(1)
}

fn part(mime: &str, bytes: &[u8]) -> ImagePart {
    ImagePart {
        mime: mime.to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb([200, 30, 30]));
        let mut out = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn a_small_image_is_sent_as_it_is() {
        let bytes = png(64, 48);
        let part = image_part(&bytes).unwrap();
        assert_eq!(part.mime, "image/png");
        let back = base64::engine::general_purpose::STANDARD
            .decode(&part.data)
            .unwrap();
        assert_eq!(back, bytes);
    }

    #[test]
    fn a_large_image_is_downscaled_within_the_pixel_budget() {
        let part = image_part(&png(3000, 2000)).unwrap();
        assert_eq!(part.mime, "image/jpeg");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&part.data)
            .unwrap();
        let (w, h) = ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .unwrap()
            .into_dimensions()
            .unwrap();
        assert!(u64::from(w) * u64::from(h) <= MAX_PIXELS, "{w}×{h}");
        assert!(w > h, "the aspect ratio is kept");
    }

    #[test]
    fn other_formats_and_garbage_are_refused() {
        assert!(image_part(b"GIF89a....").is_err());
        assert!(image_part(b"not an image").is_err());
    }
}
