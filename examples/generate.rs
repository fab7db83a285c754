//! Embedding wgllm in a program: load a model, pick a device, generate with streamed text.
//!
//! `cargo run --release --example generate -- [MODEL_DIR_OR_GGUF] [PROMPT]` (without a model, the
//! embedded tiny Qwen3, whose text is gibberish by design).
use std::io::Write;
use wgllm::{pick_device, Engine, Sampler, Sampling, Step, StreamDecoder};

fn main() -> wgllm::Result<()> {
    let mut args = std::env::args().skip(1);
    let model = match args.next() {
        Some(m) => std::path::PathBuf::from(m),
        None => wgllm::default_model_dir()?,
    };
    let prompt = args.next().unwrap_or_else(|| "The capital of France is".to_string());

    // The fastest GPU, or the cpu backend where there is none.
    let dev = pick_device(None)?;
    println!("[{}]", dev.name());
    let mut engine = Engine::load(&model, dev, 512, &mut |_, _| {})?;
    let tokenizer = engine.tokenizer.take().expect("the model carries a tokenizer");
    let ids = tokenizer.encode_prompt(&prompt)?;

    let mut sampler = Sampler::new(Sampling {
        temperature: 0.7,
        top_p: 0.9,
        seed: 1,
        ..Default::default()
    });
    // Text streams as it becomes final: a character split across tokens waits for its last byte.
    let mut stream = StreamDecoder::new(&[]);
    let mut on_token = |s: &Step| match stream.push(&tokenizer, s.token) {
        Ok(piece) => {
            print!("{piece}");
            let _ = std::io::stdout().flush();
            true
        }
        Err(_) => false,
    };
    let steps = engine.generate(&ids, 16, &mut sampler, None, true, &mut on_token)?;
    println!("{}", stream.finish());
    println!("[{} tokens]", steps.len());
    Ok(())
}
