#!/usr/bin/env python3
"""Text to image through Optimum's ORTStableDiffusionPipeline (code written for onnxruntime:
its text encoder, UNet and VAE decoder sessions, a DDIM loop with classifier-free guidance),
once with onnxruntime and once with Onyx's classes put in its place, each in its own process;
compares the images. The pipeline is a small Stable Diffusion built here with seeded, noisy
weights (a CLIP text encoder, a cross-attention UNet, a KL VAE; a letters-only tokenizer),
saved with diffusers and exported by `optimum-cli export onnx`.

Usage: VENV/bin/python scripts/check_optimum_diffusion.py WORK_DIR
(VENV: pip install torch onnxscript "diffusers<0.36" transformers optimum-onnx onnxruntime,
with the onyx package importable, e.g. through PYTHONPATH). Exit status 1 if the images differ
by more than 1e-4."""
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_optimum_generate import SWAPPED  # noqa: E402


def build_pipeline(out):
    import diffusers as df
    import torch
    import transformers as tf
    torch.manual_seed(0)
    letters = [chr(c) for c in range(ord('a'), ord('z') + 1)]
    vocab = {'<|startoftext|>': 0, '<|endoftext|>': 1}
    vocab.update({w: len(vocab) + i for i, w in enumerate(letters + [c + '</w>' for c in letters])})
    tok_dir = os.path.join(out, 'tokenizer_files')
    os.makedirs(tok_dir, exist_ok=True)
    json.dump(vocab, open(os.path.join(tok_dir, 'vocab.json'), 'w'))
    open(os.path.join(tok_dir, 'merges.txt'), 'w').write('#version: 0.2\n')
    tokenizer = tf.CLIPTokenizer(os.path.join(tok_dir, 'vocab.json'), os.path.join(tok_dir, 'merges.txt'),
                                 model_max_length=16)
    text = tf.CLIPTextModel(tf.CLIPTextConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                                              num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=16,
                                              bos_token_id=0, eos_token_id=1, pad_token_id=1))
    unet = df.UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                                   block_out_channels=(32, 64), down_block_types=('CrossAttnDownBlock2D', 'DownBlock2D'),
                                   up_block_types=('UpBlock2D', 'CrossAttnUpBlock2D'), cross_attention_dim=32,
                                   attention_head_dim=4, norm_num_groups=8)
    vae = df.AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 32),
                           down_block_types=('DownEncoderBlock2D',) * 2, up_block_types=('UpDecoderBlock2D',) * 2,
                           norm_num_groups=8, layers_per_block=1, sample_size=32)
    with torch.no_grad():  # diffusers zero-initializes output layers: give every weight some spread
        for model in (text, unet, vae):
            for p in model.parameters():
                p.add_(0.05 * torch.randn_like(p))
    scheduler = df.DDIMScheduler(beta_schedule='scaled_linear', beta_start=0.00085, beta_end=0.012, clip_sample=False,
                                 set_alpha_to_one=False, steps_offset=1)
    df.StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tokenizer, unet=unet, scheduler=scheduler,
                               safety_checker=None, feature_extractor=None,
                               requires_safety_checker=False).save_pretrained(os.path.join(out, 'pipeline'))


def generate(onnx_dir, runtime, image_path):
    import onnxruntime
    if runtime == 'onyx':
        import onyx
        for name in SWAPPED:
            if hasattr(onyx, name):
                setattr(onnxruntime, name, getattr(onyx, name))
    import torch
    from optimum.onnxruntime import ORTStableDiffusionPipeline
    pipe = ORTStableDiffusionPipeline.from_pretrained(onnx_dir)
    session_module = type(pipe.unet.session).__module__
    start = time.perf_counter()
    images = pipe(['a red fox', 'blue sky'], num_inference_steps=8, guidance_scale=7.5, output_type='np', height=32,
                  width=32, generator=torch.Generator().manual_seed(0)).images
    np.save(image_path, images)
    print(json.dumps({'session_module': session_module, 's': time.perf_counter() - start}))


def main(work):
    onnx_dir = os.path.join(work, 'onnx')
    if not os.path.isdir(onnx_dir):
        build_pipeline(work)
        subprocess.run(['optimum-cli', 'export', 'onnx', '--model', os.path.join(work, 'pipeline'), '--task',
                        'text-to-image', onnx_dir], check=True, capture_output=True)
    images = {}
    for runtime in ('onnxruntime', 'onyx'):
        path = os.path.join(work, f'images_{runtime}.npy')
        r = subprocess.run([sys.executable, __file__, '--generate', onnx_dir, runtime, path], capture_output=True,
                           text=True)
        if r.returncode != 0:
            print(f'{runtime}: failed\n{r.stderr[-2000:]}')
            return 1
        info = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{runtime:12s} sessions from {info['session_module']}, 8 steps in {info['s']:.3f} s")
        images[runtime] = np.load(path)
    diff = float(np.abs(images['onyx'] - images['onnxruntime']).max())
    print(f'images {images["onyx"].shape}: max abs difference {diff:.2e}')
    return 0 if diff <= 1e-4 else 1


if __name__ == '__main__':
    if sys.argv[1] == '--generate':
        generate(*sys.argv[2:5])
    else:
        sys.exit(main(sys.argv[1]))
