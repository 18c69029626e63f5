//! WAV → the one voice-note encoding: Ogg/Opus, mono, 48 kHz (RFC 7845). Engines such as
//! espeak-ng and piper write 22 050 Hz, which Opus does not take, so the samples are
//! resampled first (rubato's FFT resampler); `opus-rs` (a pure-Rust port of libopus, so the
//! build needs no C library) encodes 20 ms frames for speech, and the `ogg` crate writes the
//! pages. The duration and a waveform come from the same samples.

use std::io::Cursor;

use ogg::writing::{PacketWriteEndInfo, PacketWriter};
use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};
use switchboard_channel::VoiceNote;

/// The rate Opus runs at, and the unit of Ogg/Opus granule positions.
const RATE: u32 = 48_000;
/// Samples per 20 ms frame at 48 kHz.
const FRAME: usize = 960;
/// The most waveform values a platform takes (Discord).
const WAVEFORM_MAX: usize = 256;
/// The encoder's lookahead at 48 kHz (libopus's `OPUS_GET_LOOKAHEAD` for speech: 2.5 ms plus
/// its 4 ms delay compensation), which decoders skip: the header's pre-skip.
const PRE_SKIP: u16 = 312;
/// Room for one encoded 20 ms packet (the format's own bound is 1275 bytes a frame).
const MAX_PACKET: usize = 4000;
/// Stream serial number; one logical stream per file, so any fixed value is unique.
const SERIAL: u32 = 0x5357_4244;

/// Encode the WAV file `wav` as an Ogg/Opus voice note at `bitrate` bits per second.
pub fn voice_note(wav: &[u8], bitrate: i32) -> Result<VoiceNote, String> {
    let (samples, rate) = read_wav(wav)?;
    if samples.is_empty() {
        return Err("the engine's audio holds no samples".into());
    }
    let duration_ms = samples.len() as u64 * 1000 / u64::from(rate);
    let resampled = resample(&samples, rate)?;
    let bytes = ogg_opus(&resampled, rate, bitrate)?;
    Ok(VoiceNote {
        bytes,
        duration_secs: u32::try_from(duration_ms.div_ceil(1000).max(1)).unwrap_or(u32::MAX),
        duration_ms,
        waveform: waveform(&samples, duration_ms),
    })
}

/// The mono samples of a WAV file (channels averaged) and its rate. A WAV written to a pipe
/// cannot go back to fill in its length (espeak-ng's `--stdout`, a streamed HTTP answer), so
/// its samples are read to the end of the data actually there.
fn read_wav(wav: &[u8]) -> Result<(Vec<f32>, u32), String> {
    let reader = hound::WavReader::new(Cursor::new(wav))
        .map_err(|e| format!("the engine's audio is not a WAV file: {e}"))?;
    let spec = reader.spec();
    if spec.channels == 0 || spec.sample_rate < 8_000 {
        return Err(format!(
            "the engine's audio has {} channels at {} Hz",
            spec.channels, spec.sample_rate
        ));
    }
    let interleaved: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader.into_samples::<f32>().map_while(Result::ok).collect(),
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f32;
            reader
                .into_samples::<i32>()
                .map_while(Result::ok)
                .map(|s| s as f32 * scale)
                .collect()
        }
    };
    let channels = usize::from(spec.channels);
    let mono = interleaved
        .chunks_exact(channels)
        .map(|frame| frame.iter().sum::<f32>() / channels as f32)
        .collect();
    Ok((mono, spec.sample_rate))
}

/// `samples` at `rate` resampled to 48 kHz.
fn resample(samples: &[f32], rate: u32) -> Result<Vec<f32>, String> {
    if rate == RATE {
        return Ok(samples.to_vec());
    }
    let mut resampler = Fft::<f32>::new(rate as usize, RATE as usize, 1024, 1, FixedSync::Both)
        .map_err(|e| format!("cannot resample from {rate} Hz: {e}"))?;
    let input = InterleavedSlice::new(samples, 1, samples.len()).map_err(|e| e.to_string())?;
    let output = resampler
        .process_all(&input, samples.len(), None)
        .map_err(|e| format!("resampling failed: {e}"))?;
    Ok(output.take_data())
}

/// 48 kHz mono `samples` as an Ogg/Opus file; `input_rate` is recorded in its header.
fn ogg_opus(samples: &[f32], input_rate: u32, bitrate: i32) -> Result<Vec<u8>, String> {
    let fail = |e: &str| format!("the Opus encoder failed: {e}");
    let mut encoder =
        opus_rs::OpusEncoder::new(RATE as i32, 1, opus_rs::Application::Voip).map_err(fail)?;
    encoder.bitrate_bps = bitrate;
    let pre_skip = PRE_SKIP;
    let mut out = Vec::new();
    let mut writer = PacketWriter::new(&mut out);
    write(
        &mut writer,
        head(pre_skip, input_rate),
        PacketWriteEndInfo::EndPage,
        0,
    )?;
    write(&mut writer, tags(), PacketWriteEndInfo::EndPage, 0)?;
    // The encoder's lookahead is flushed with silence, so the last real samples are coded;
    // the final granule position then trims the stream back to exactly `samples`.
    let mut padded = samples.to_vec();
    padded.resize(
        (samples.len() + usize::from(pre_skip)).div_ceil(FRAME) * FRAME,
        0.0,
    );
    let frames = padded.len() / FRAME;
    let total = u64::from(pre_skip) + samples.len() as u64;
    for (i, frame) in padded.chunks_exact(FRAME).enumerate() {
        let mut packet = vec![0; MAX_PACKET];
        let len = encoder.encode(frame, FRAME, &mut packet).map_err(fail)?;
        packet.truncate(len);
        let last = i + 1 == frames;
        // Samples decoded by the end of this packet, the pre-skip among them; the last
        // packet's is cut back to where the speech ends.
        let granule = (((i + 1) * FRAME) as u64).min(total);
        let end = if last {
            PacketWriteEndInfo::EndStream
        } else if (i + 1) % 50 == 0 {
            PacketWriteEndInfo::EndPage // a page a second, so players can seek
        } else {
            PacketWriteEndInfo::NormalPacket
        };
        write(&mut writer, packet, end, granule)?;
    }
    drop(writer);
    Ok(out)
}

/// Write one packet of the stream.
fn write(
    writer: &mut PacketWriter<'_, &mut Vec<u8>>,
    packet: Vec<u8>,
    end: PacketWriteEndInfo,
    granule: u64,
) -> Result<(), String> {
    writer
        .write_packet(packet, SERIAL, end, granule)
        .map_err(|e| format!("writing the Ogg stream failed: {e}"))
}

/// The `OpusHead` packet: version 1, one channel, mapping family 0.
fn head(pre_skip: u16, input_rate: u32) -> Vec<u8> {
    let mut head = b"OpusHead".to_vec();
    head.push(1);
    head.push(1);
    head.extend_from_slice(&pre_skip.to_le_bytes());
    head.extend_from_slice(&input_rate.to_le_bytes());
    head.extend_from_slice(&0i16.to_le_bytes());
    head.push(0);
    head
}

/// The `OpusTags` packet: the vendor and no comments.
fn tags() -> Vec<u8> {
    let vendor = b"switchboard";
    let mut tags = b"OpusTags".to_vec();
    tags.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
    tags.extend_from_slice(vendor);
    tags.extend_from_slice(&0u32.to_le_bytes());
    tags
}

/// Loudness over time: one value per 100 ms (at most 256), each the peak of its stretch
/// scaled so the loudest is 255.
fn waveform(samples: &[f32], duration_ms: u64) -> Vec<u8> {
    let points = usize::try_from(duration_ms / 100)
        .unwrap_or(WAVEFORM_MAX)
        .clamp(1, WAVEFORM_MAX);
    let stretch = samples.len().div_ceil(points).max(1);
    let peaks: Vec<f32> = samples
        .chunks(stretch)
        .map(|c| c.iter().fold(0f32, |m, s| m.max(s.abs())))
        .collect();
    let loudest = peaks.iter().copied().fold(0f32, f32::max);
    if loudest <= 0.0 {
        return vec![0; peaks.len()];
    }
    peaks
        .iter()
        .map(|p| (p / loudest * 255.0).round() as u8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16-bit mono WAV of a `hz` tone, `ms` long at `rate`.
    fn tone(rate: u32, ms: u32, hz: f32) -> Vec<u8> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut out = Cursor::new(Vec::new());
        let mut w = hound::WavWriter::new(&mut out, spec).expect("writer");
        for i in 0..rate * ms / 1000 {
            let t = i as f32 / rate as f32;
            let s = (t * hz * std::f32::consts::TAU).sin() * 0.5;
            w.write_sample((s * f32::from(i16::MAX)) as i16)
                .expect("sample");
        }
        w.finalize().expect("finalize");
        out.into_inner()
    }

    /// The Ogg pages' (granule position, header type) in order.
    fn pages(bytes: &[u8]) -> Vec<(u64, u8)> {
        let mut reader = ogg::PacketReader::new(Cursor::new(bytes));
        let mut out = Vec::new();
        while let Some(packet) = reader.read_packet().expect("a valid Ogg stream") {
            if packet.last_in_page() {
                out.push((packet.absgp_page(), u8::from(packet.last_in_stream())));
            }
        }
        out
    }

    #[test]
    fn a_22050_hz_wav_becomes_ogg_opus_with_its_exact_duration() {
        let note = voice_note(&tone(22_050, 2_500, 440.0), 24_000).expect("encodes");
        assert!(note.bytes.starts_with(b"OggS"));
        assert_eq!((note.duration_ms, note.duration_secs), (2_500, 3));
        let pages = pages(&note.bytes);
        let (last_granule, last) = *pages.last().expect("pages");
        assert_eq!(last, 1, "the stream ends");
        assert!(
            pages
                .iter()
                .rev()
                .skip(1)
                .all(|(granule, _)| granule % 960 == 0),
            "only the last page is trimmed, and by less than a packet: {pages:?}"
        );
        let mut reader = ogg::PacketReader::new(Cursor::new(&note.bytes));
        let head = reader.read_packet().expect("ok").expect("head");
        assert!(head.data.starts_with(b"OpusHead"));
        let pre_skip = u64::from(u16::from_le_bytes([head.data[10], head.data[11]]));
        assert_eq!(
            u32::from_le_bytes(head.data[12..16].try_into().expect("4 bytes")),
            22_050
        );
        // Resampling may round by a sample or two; the granule says 2.5 s at 48 kHz.
        let samples = last_granule - pre_skip;
        assert!(samples.abs_diff(120_000) <= 2, "{samples}");
        assert_eq!(note.waveform.len(), 25);
        assert!(note.waveform.contains(&255));
    }

    #[test]
    fn a_stereo_float_wav_at_48_khz_is_taken_as_it_is() {
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 48_000,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        };
        let mut out = Cursor::new(Vec::new());
        let mut w = hound::WavWriter::new(&mut out, spec).expect("writer");
        for i in 0..48_000 {
            let s = (i as f32 / 10.0).sin() * 0.3;
            w.write_sample(s).expect("left");
            w.write_sample(-s).expect("right");
        }
        w.finalize().expect("finalize");
        let note = voice_note(&out.into_inner(), 16_000).expect("encodes");
        assert_eq!((note.duration_ms, note.duration_secs), (1_000, 1));
    }

    #[test]
    fn a_wav_whose_header_overstates_its_length_is_read_to_its_end() {
        let mut wav = tone(22_050, 1_000, 300.0);
        // As a pipe writer leaves it: lengths it could not go back to fill in.
        wav[4..8].copy_from_slice(&0x7fff_f024u32.to_le_bytes());
        wav[40..44].copy_from_slice(&0x7fff_f000u32.to_le_bytes());
        let note = voice_note(&wav, 24_000).expect("encodes");
        assert_eq!(note.duration_ms, 1_000);
    }

    #[test]
    fn what_is_not_audio_is_refused_with_a_reason() {
        let err = voice_note(b"<html>Bad gateway</html>", 24_000).unwrap_err();
        assert!(err.contains("not a WAV file"), "{err}");
        let empty = voice_note(&tone(22_050, 0, 1.0), 24_000).unwrap_err();
        assert!(empty.contains("no samples"), "{empty}");
    }
}
