#!/usr/bin/env python3
"""Hugging Face transformers architectures with small configs and seeded random
weights, exported by both PyTorch exporters: `hf_NAME` by the TorchScript one
(opset 17), `hfd_NAME` by the default one of PyTorch 2 (`dynamo=True`). These
graphs differ from hand-written models: attention masks built in the graph
(Expand / Where / large negative fills), relative position buckets (T5,
DeBERTa), rotary embeddings computed from positions, tied embeddings, encoder-
decoder pairs, convolutional feature extractors (Whisper, wav2vec2). MORE adds 50 further
architectures with noise on every weight (ModernBERT ... Mamba, RWKV, DETR, SAM, OWL-ViT, Deformable
DETR's grid_sample, FNet's DFT, ViTMAE's argsort, VideoMAE's Conv3d); several of them one exporter
cannot take (TorchScript: BigBird, Reformer, FNet and the decoders whose masks use vmap (Phi-3, Qwen3,
Gemma 2/3, OLMo 2, Cohere); dynamo: XLNet, BigBird, Longformer, LED), and both exporters write a
CANINE graph that neither onnxruntime nor Onyx can run.
Same output convention as the other scripts (OUT/NAME.onnx + OUT/NAME.input_K.npy),
so `scripts/check_models.py` and `../shared/bench/compare_ort.py` take them as is.

Needs: python3 -m venv VENV && VENV/bin/pip install torch onnxscript transformers
Usage: VENV/bin/python scripts/make_hf_models.py OUT [NAME ...]   (NAME: hf_bert, hfd_llama, ...;
       the wide *_base4 models, e.g. hf_bert_base4, only when named)"""
import os
import sys

import numpy as np
import torch
import transformers as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_each import export_each, parse_name  # noqa: E402

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=1000)


class Wrapped(torch.nn.Module):
    """Positional tensors in, the named output tensors out (no cache objects)."""

    def __init__(self, model, in_names, out_names, extra=None):
        super().__init__()
        self.model, self.in_names, self.output_names = model, in_names, out_names
        self.extra = extra or {}

    def forward(self, *args):
        out = self.model(**dict(zip(self.in_names, args)), **self.extra, return_dict=True)
        return tuple(out[n] for n in self.output_names)


def text_inputs(batch=2, seq=16, vocab=1000, with_types=False):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, vocab, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if batch > 1:
        mask[1, seq - 5:] = 0  # the second row is padded: the mask path matters
    args = [ids, mask]
    if with_types:
        types = torch.zeros(batch, seq, dtype=torch.int64)
        types[:, seq // 2:] = 1
        args.append(types)
    return args


def encoder(config_cls, model_cls, with_types=False, out='last_hidden_state', batch=2, seq=16, base=SMALL, vocab=1000,
            **cfg):
    def build():
        model = model_cls(config_cls(**{**base, **cfg}))
        names = ['input_ids', 'attention_mask'] + (['token_type_ids'] if with_types else [])
        return model, text_inputs(batch, seq, vocab, with_types=with_types), names, [out]
    return build


def causal_lm(config_cls, model_cls, batch=2, seq=16, **cfg):
    def build():
        model = model_cls(config_cls(**{**SMALL, **cfg}))
        return model, text_inputs(batch, seq), ['input_ids', 'attention_mask'], ['logits']
    return build


# BERT-base / GPT-2-small widths with 4 layers, one sequence of 128: where the kernels, not the
# per-node overhead, decide (the small configs above measure the latter).
BASE = dict(hidden_size=768, num_hidden_layers=4, num_attention_heads=12, intermediate_size=3072, batch=1, seq=128)


def seq2seq(config_cls, model_cls, **cfg):
    def build():
        model = model_cls(config_cls(**cfg))
        ids, mask = text_inputs()
        dec = torch.randint(3, 1000, (2, 7), generator=torch.Generator().manual_seed(2))
        return model, [ids, mask, dec], ['input_ids', 'attention_mask', 'decoder_input_ids'], ['logits']
    return build


def vision(config_cls, model_cls, size=64, out='last_hidden_state', **cfg):
    def build():
        model = model_cls(config_cls(image_size=size, **cfg))
        x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(1))
        return model, [x], ['pixel_values'], [out]
    return build


def whisper():
    cfg = tf.WhisperConfig(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                           decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=80,
                           max_source_positions=64, max_target_positions=64, pad_token_id=1, bos_token_id=2,
                           eos_token_id=2, decoder_start_token_id=2)
    model = tf.WhisperForConditionalGeneration(cfg)
    g = torch.Generator().manual_seed(1)
    feats = torch.randn(1, 80, 128, generator=g)
    dec = torch.randint(3, 1000, (1, 6), generator=g)
    return model, [feats, dec], ['input_features', 'decoder_input_ids'], ['logits']


def wav2vec2():
    cfg = tf.Wav2Vec2Config(**{**SMALL, 'vocab_size': 32}, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                            conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    model = tf.Wav2Vec2ForCTC(cfg)
    x = torch.randn(2, 4000, generator=torch.Generator().manual_seed(1))
    return model, [x], ['input_values'], ['logits']


def clip():
    text = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=1000)
    vis = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=64,
               patch_size=16)
    model = tf.CLIPModel(tf.CLIPConfig(text_config=text, vision_config=vis, projection_dim=32))
    ids, mask = text_inputs()
    x = torch.randn(3, 3, 64, 64, generator=torch.Generator().manual_seed(3))
    return model, [ids, x, mask], ['input_ids', 'pixel_values', 'attention_mask'], ['logits_per_image']


def dinov2():
    # Trained at 64 px, run at 56: the position embeddings are interpolated (bicubic) in the graph.
    model = tf.Dinov2Model(tf.Dinov2Config(image_size=64, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                           num_attention_heads=4, mlp_ratio=2))
    x = torch.randn(2, 3, 56, 56, generator=torch.Generator().manual_seed(1))
    return model, [x], ['pixel_values'], ['last_hidden_state']


def depth_anything():
    backbone = tf.Dinov2Config(image_size=56, patch_size=14, hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                               mlp_ratio=2, out_features=['stage1', 'stage2', 'stage3', 'stage4'],
                               reshape_hidden_states=False)
    model = tf.DepthAnythingForDepthEstimation(tf.DepthAnythingConfig(
        backbone_config=backbone, reassemble_hidden_size=32, neck_hidden_sizes=[8, 16, 32, 32], fusion_hidden_size=16,
        head_hidden_size=8, patch_size=14))
    x = torch.randn(1, 3, 56, 70, generator=torch.Generator().manual_seed(1))
    return model, [x], ['pixel_values'], ['predicted_depth']


def speech_ctc(config_cls, model_cls, **cfg):
    def build():
        model = model_cls(config_cls(**{**SMALL, 'vocab_size': 32}, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                                     conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                                     num_conv_pos_embedding_groups=4, **cfg))
        x = torch.randn(2, 4000, generator=torch.Generator().manual_seed(1))
        return model, [x], ['input_values'], ['logits']
    return build


def encodec():
    model = tf.EncodecModel(tf.EncodecConfig(target_bandwidths=[1.5, 3.0], sampling_rate=8000, audio_channels=1,
                                             hidden_size=32, num_filters=8, num_residual_layers=1,
                                             upsampling_ratios=[4, 4, 2], codebook_size=64, codebook_dim=32,
                                             num_lstm_layers=2))
    x = torch.randn(1, 1, 3200, generator=torch.Generator().manual_seed(1))
    return model, [x], ['input_values'], ['audio_values']


# The further architectures below (MORE) get seeded noise on every parameter and on batch-norm
# statistics: freshly initialised HF models have zero biases, zero GRN / layer-scale gammas and
# identity batch norms, which would hide the paths they feed.
def noisy(build, scale=0.02):
    def wrapped():
        model, *rest = build()
        g = torch.Generator().manual_seed(5)
        with torch.no_grad():
            for p in model.parameters():
                if p.is_floating_point():
                    p.add_(torch.randn(p.shape, generator=g) * scale)
            for n, b in model.named_buffers():
                if n.endswith('running_mean'):
                    b.add_(torch.randn(b.shape, generator=g) * 0.1)
                elif n.endswith('running_var'):
                    b.mul_(0.5 + torch.rand(b.shape, generator=g))
        return (model, *rest)
    return wrapped


def images(batch=2, h=64, w=64, seed=1):
    return torch.randn(batch, 3, h, w, generator=torch.Generator().manual_seed(seed))


VIT_SMALL = {k: v for k, v in SMALL.items() if k != 'vocab_size'}
S2S = dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
           decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, pad_token_id=1, bos_token_id=0,
           eos_token_id=2, decoder_start_token_id=2)


def big_bird():
    # Block-sparse attention proper: 64 tokens > (5 + 2 * random blocks) * block size.
    return encoder(tf.BigBirdConfig, tf.BigBirdModel, seq=64, attention_type='block_sparse', block_size=4,
                   num_random_blocks=2, max_position_embeddings=128)()


def reformer():
    # Local attention only: LSH attention draws random rotations in the forward pass.
    cfg = tf.ReformerConfig(vocab_size=1000, hidden_size=64, num_attention_heads=2, attention_head_size=16,
                            attn_layers=['local', 'local'], axial_pos_shape=[4, 4], axial_pos_embds_dim=[32, 32],
                            max_position_embeddings=16, feed_forward_size=128, local_attn_chunk_length=4,
                            is_decoder=False, pad_token_id=0)
    return tf.ReformerModel(cfg), text_inputs(), ['input_ids', 'attention_mask'], ['last_hidden_state']


def yolos():
    # Trained at 64 x 64, run at 48 x 64: the position embeddings are interpolated in the graph.
    model = tf.YolosForObjectDetection(tf.YolosConfig(**VIT_SMALL, image_size=[64, 64], patch_size=16,
                                                      num_detection_tokens=8, num_labels=5))
    return model, [images(2, 48, 64)], ['pixel_values'], ['logits', 'pred_boxes']


def detr():
    backbone = tf.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 64], depths=[1, 1, 1, 1],
                               layer_type='basic', out_features=['stage4'])
    cfg = tf.DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False, backbone=None,
                        d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=10,
                        num_labels=5)
    mask = torch.ones(2, 64, 64, dtype=torch.int64)
    mask[1, :, 40:] = 0  # the second image is padded on the right
    return tf.DetrForObjectDetection(cfg), [images(), mask], ['pixel_values', 'pixel_mask'], ['logits', 'pred_boxes']


def owl(config_cls, model_cls, outs):
    def build():
        text = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    vocab_size=1000, max_position_embeddings=16)
        vis = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=64,
                   patch_size=16)
        model = model_cls(config_cls(text_config=text, vision_config=vis, projection_dim=32))
        ids, mask = text_inputs(batch=4, seq=16)  # 2 images x 2 text queries
        return model, [ids, images(), mask], ['input_ids', 'pixel_values', 'attention_mask'], outs
    return build


def sam():
    cfg = tf.SamConfig(
        vision_config=dict(hidden_size=32, output_channels=16, num_hidden_layers=2, num_attention_heads=2,
                           image_size=64, patch_size=8, mlp_dim=64, window_size=4, global_attn_indexes=[1],
                           num_pos_feats=8),
        prompt_encoder_config=dict(hidden_size=16, image_size=64, patch_size=8, mask_input_channels=4),
        mask_decoder_config=dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, mlp_dim=32,
                                 iou_head_hidden_dim=16))
    g = torch.Generator().manual_seed(2)
    points = torch.rand(1, 1, 2, 2, generator=g) * 64
    labels = torch.tensor([[[1, 0]]], dtype=torch.int64)
    return (tf.SamModel(cfg), [images(1), points, labels], ['pixel_values', 'input_points', 'input_labels'],
            ['iou_scores', 'pred_masks'])


def pix2struct():
    cfg = tf.Pix2StructVisionConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, d_ff=128, d_kv=16,
                                    patch_embed_hidden_size=48, seq_len=64)
    g = torch.Generator().manual_seed(1)
    rows = torch.arange(16).div(4, rounding_mode='floor') + 1
    cols = torch.arange(16) % 4 + 1
    patches = torch.cat([torch.stack([rows, cols], 1).float(), torch.randn(16, 48, generator=g)], 1)
    patches = patches.expand(2, 16, 50).clone()
    mask = torch.ones(2, 16)
    mask[1, 12:] = 0
    patches[1, 12:] = 0  # padding patches, as the processor writes them
    return (tf.Pix2StructVisionModel(cfg), [patches, mask], ['flattened_patches', 'attention_mask'],
            ['last_hidden_state'])


def trocr():
    enc = tf.ViTConfig(**VIT_SMALL, image_size=64, patch_size=16)
    dec = tf.TrOCRConfig(vocab_size=1000, d_model=64, decoder_layers=2, decoder_attention_heads=4,
                         decoder_ffn_dim=128, max_position_embeddings=64, use_cache=False)
    cfg = tf.VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    cfg.decoder_start_token_id, cfg.pad_token_id = 2, 1
    model = tf.VisionEncoderDecoderModel(cfg)
    dec_ids = torch.randint(3, 1000, (2, 7), generator=torch.Generator().manual_seed(2))
    return model, [images(), dec_ids], ['pixel_values', 'decoder_input_ids'], ['logits']


def speecht5():
    cfg = tf.SpeechT5Config(vocab_size=1000, hidden_size=64, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                            decoder_ffn_dim=128, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, max_text_positions=64,
                            encoder_max_relative_position=16)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4000, generator=g)
    dec = torch.randint(3, 1000, (2, 7), generator=g)
    return tf.SpeechT5ForSpeechToText(cfg), [x, dec], ['input_values', 'decoder_input_ids'], ['logits']


def state_lm(config_cls, model_cls, **cfg):
    # Mamba / RWKV: no attention mask input (they ignore it, and the dynamo exporter drops unused inputs).
    def build():
        model = model_cls(config_cls(**cfg))
        return model, text_inputs()[:1], ['input_ids'], ['logits']
    return build


def fnet():
    # Fourier token mixing (torch.fft.fftn); FNet takes no attention mask.
    model = tf.FNetModel(tf.FNetConfig(**SMALL))
    ids, _, types = text_inputs(with_types=True)
    return model, [ids, types], ['input_ids', 'token_type_ids'], ['last_hidden_state']


def vit_mae():
    # The noise that picks the kept patches is an input: argsort / gather on it in the graph.
    model = tf.ViTMAEModel(tf.ViTMAEConfig(**VIT_SMALL, image_size=64, patch_size=8, mask_ratio=0.75))
    noise = torch.rand(2, 64, generator=torch.Generator().manual_seed(2))
    return model, [images(), noise], ['pixel_values', 'noise'], ['last_hidden_state', 'mask', 'ids_restore']


def videomae():
    model = tf.VideoMAEModel(tf.VideoMAEConfig(**VIT_SMALL, image_size=32, patch_size=8, num_frames=4, tubelet_size=2))
    x = torch.randn(2, 4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    return model, [x], ['pixel_values'], ['last_hidden_state']


def swin2sr():
    # A non-square 28 x 36 input (30 x 36 fails in PyTorch itself), 2x pixel-shuffle upsampling.
    model = tf.Swin2SRForImageSuperResolution(tf.Swin2SRConfig(
        image_size=32, patch_size=1, embed_dim=16, depths=[2], num_heads=[2], window_size=4, upscale=2,
        upsampler='pixelshuffle'))
    return model, [images(1, 28, 36)], ['pixel_values'], ['reconstruction']


def perceiver():
    cfg = tf.PerceiverConfig(num_latents=16, d_latents=32, d_model=32, num_blocks=1, num_self_attends_per_block=2,
                             num_self_attention_heads=2, num_cross_attention_heads=1, vocab_size=262,
                             max_position_embeddings=64)
    ids, mask = text_inputs(vocab=262)
    return tf.PerceiverForMaskedLM(cfg), [ids, mask], ['input_ids', 'attention_mask'], ['logits']


def deformable_detr():
    # Multi-scale deformable attention: bilinear grid_sample over 4 feature levels.
    backbone = tf.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 64], depths=[1, 1, 1, 1],
                               layer_type='basic', out_features=['stage2', 'stage3', 'stage4'])
    cfg = tf.DeformableDetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                                  backbone=None, d_model=64, encoder_layers=2, decoder_layers=2,
                                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                                  decoder_ffn_dim=128, num_queries=10, encoder_n_points=2, decoder_n_points=2,
                                  num_labels=5)
    mask = torch.ones(2, 64, 64, dtype=torch.int64)
    mask[1, :, 40:] = 0
    return (tf.DeformableDetrForObjectDetection(cfg), [images(), mask], ['pixel_values', 'pixel_mask'],
            ['logits', 'pred_boxes'])


MORE = {
    'modernbert': encoder(tf.ModernBertConfig, tf.ModernBertModel, global_attn_every_n_layers=2, local_attention=8,
                          pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2,
                          reference_compile=False),
    'convbert': encoder(tf.ConvBertConfig, tf.ConvBertModel, with_types=True, embedding_size=32, head_ratio=2,
                        conv_kernel_size=9),
    'squeezebert': encoder(tf.SqueezeBertConfig, tf.SqueezeBertModel, embedding_size=64, q_groups=2, k_groups=2,
                           v_groups=2, post_attention_groups=2, intermediate_groups=4, output_groups=4),
    'funnel': encoder(tf.FunnelConfig, tf.FunnelModel, base={}, vocab_size=1000, d_model=64, n_head=4, d_head=16,
                      d_inner=128, block_sizes=[1, 1], num_decoder_layers=1),
    'xlnet': encoder(tf.XLNetConfig, tf.XLNetModel, base={}, vocab_size=1000, d_model=64, n_layer=2, n_head=4,
                     d_inner=128),
    'big_bird': big_bird,
    'esm': encoder(tf.EsmConfig, tf.EsmModel, vocab=33, vocab_size=33, pad_token_id=1, mask_token_id=32,
                   position_embedding_type='rotary', token_dropout=True),
    'canine': encoder(tf.CanineConfig, tf.CanineModel, downsampling_rate=4, num_hash_functions=4,
                      num_hash_buckets=64, local_transformer_stride=8),
    'longformer': encoder(tf.LongformerConfig, tf.LongformerModel, attention_window=4),
    'reformer': reformer,
    'deit': vision(tf.DeiTConfig, tf.DeiTForImageClassificationWithTeacher, out='logits', patch_size=8, **VIT_SMALL),
    'beit': vision(tf.BeitConfig, tf.BeitForImageClassification, out='logits', patch_size=8,
                   use_relative_position_bias=True, use_mean_pooling=True, layer_scale_init_value=0.1, **VIT_SMALL),
    'convnextv2': vision(tf.ConvNextV2Config, tf.ConvNextV2ForImageClassification, out='logits',
                         hidden_sizes=[16, 32, 64, 96], depths=[1, 1, 2, 1]),
    'regnet': vision(tf.RegNetConfig, tf.RegNetForImageClassification, out='logits', embedding_size=16,
                     hidden_sizes=[16, 32], depths=[1, 1], groups_width=8, layer_type='y'),
    'poolformer': vision(tf.PoolFormerConfig, tf.PoolFormerForImageClassification, out='logits',
                         hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1]),
    # Segmentation, not depth: the depth head's final ReLU zeroes the whole output at these weights.
    'dpt': vision(tf.DPTConfig, tf.DPTForSemanticSegmentation, out='logits', num_labels=3, hidden_size=32,
                  num_hidden_layers=4, num_attention_heads=2, intermediate_size=64, patch_size=16,
                  backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[8, 16, 32, 32], fusion_hidden_size=16),
    'glpn': vision(tf.GLPNConfig, tf.GLPNForDepthEstimation, out='predicted_depth', hidden_sizes=[8, 16, 24, 32],
                   depths=[1, 1, 1, 1], num_attention_heads=[1, 1, 2, 2], decoder_hidden_size=16,
                   mlp_ratios=[2, 2, 2, 2]),
    'yolos': yolos,
    'detr': detr,
    'owlvit': owl(tf.OwlViTConfig, tf.OwlViTForObjectDetection, ['logits', 'pred_boxes']),
    'owlv2': owl(tf.Owlv2Config, tf.Owlv2ForObjectDetection, ['logits', 'objectness_logits', 'pred_boxes']),
    'sam': sam,
    'pix2struct': pix2struct,
    'trocr': trocr,
    'sew': speech_ctc(tf.SEWConfig, tf.SEWForCTC, squeeze_factor=2),
    'data2vec_audio': speech_ctc(tf.Data2VecAudioConfig, tf.Data2VecAudioForCTC, conv_pos_kernel_size=5),
    'speecht5': speecht5,
    'm2m100': seq2seq(tf.M2M100Config, tf.M2M100ForConditionalGeneration, **S2S),
    'pegasus': seq2seq(tf.PegasusConfig, tf.PegasusForConditionalGeneration, **S2S),
    'led': seq2seq(tf.LEDConfig, tf.LEDForConditionalGeneration, **S2S, attention_window=4,
                   max_encoder_position_embeddings=64, max_decoder_position_embeddings=64),
    'gptj': causal_lm(tf.GPTJConfig, tf.GPTJForCausalLM, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=64),
    'opt': causal_lm(tf.OPTConfig, tf.OPTForCausalLM, ffn_dim=128, word_embed_proj_dim=64, max_position_embeddings=64),
    'bloom': causal_lm(tf.BloomConfig, tf.BloomForCausalLM, n_layer=2, n_head=4),
    'falcon': causal_lm(tf.FalconConfig, tf.FalconForCausalLM, new_decoder_architecture=True, num_kv_heads=2),
    'mpt': causal_lm(tf.MptConfig, tf.MptForCausalLM, d_model=64, n_heads=4, n_layers=2, expansion_ratio=2,
                     max_seq_len=64),
    'phi3': causal_lm(tf.Phi3Config, tf.Phi3ForCausalLM, num_key_value_heads=2, pad_token_id=0, bos_token_id=1,
                      eos_token_id=2),
    'qwen3': causal_lm(tf.Qwen3Config, tf.Qwen3ForCausalLM, num_key_value_heads=2, head_dim=16),
    'gemma2': causal_lm(tf.Gemma2Config, tf.Gemma2ForCausalLM, num_key_value_heads=2, head_dim=16, sliding_window=8,
                        attn_implementation='eager'),
    'gemma3': causal_lm(tf.Gemma3TextConfig, tf.Gemma3ForCausalLM, num_key_value_heads=2, head_dim=16,
                        sliding_window=8, layer_types=['sliding_attention', 'full_attention'],
                        attn_implementation='eager'),
    'olmo2': causal_lm(tf.Olmo2Config, tf.Olmo2ForCausalLM, num_key_value_heads=2),
    'cohere': causal_lm(tf.CohereConfig, tf.CohereForCausalLM, num_key_value_heads=2, use_qk_norm=True,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2),
    'fnet': fnet,
    # Mixture-of-experts decoders: a router's TopK picks each token's experts.
    'olmoe': causal_lm(tf.OlmoeConfig, tf.OlmoeForCausalLM, num_key_value_heads=2, num_experts=4,
                       num_experts_per_tok=2),
    'granitemoe': causal_lm(tf.GraniteMoeConfig, tf.GraniteMoeForCausalLM, num_key_value_heads=2, num_local_experts=4,
                            num_experts_per_tok=2),
    'qwen2_moe': causal_lm(tf.Qwen2MoeConfig, tf.Qwen2MoeForCausalLM, num_key_value_heads=2, num_experts=4,
                           num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=64),
    'nemotron': causal_lm(tf.NemotronConfig, tf.NemotronForCausalLM, num_key_value_heads=2, partial_rotary_factor=0.5),
    'stablelm': causal_lm(tf.StableLmConfig, tf.StableLmForCausalLM, num_key_value_heads=2, partial_rotary_factor=0.25),
    'starcoder2': causal_lm(tf.Starcoder2Config, tf.Starcoder2ForCausalLM, num_key_value_heads=2),
    'granite': causal_lm(tf.GraniteConfig, tf.GraniteForCausalLM, num_key_value_heads=2, residual_multiplier=0.5,
                         logits_scaling=2.0, embedding_multiplier=3.0),
    'vit_mae': vit_mae,
    'videomae': videomae,
    'swin2sr': swin2sr,
    'perceiver': perceiver,
    'deformable_detr': deformable_detr,
    'efficientnet': vision(tf.EfficientNetConfig, tf.EfficientNetForImageClassification, out='logits',
                           width_coefficient=0.25, depth_coefficient=0.5, hidden_dim=320),
    'mamba': state_lm(tf.MambaConfig, tf.MambaForCausalLM, hidden_size=64, num_hidden_layers=2, vocab_size=1000,
                      state_size=8, expand=2, conv_kernel=4),
    'rwkv': state_lm(tf.RwkvConfig, tf.RwkvForCausalLM, vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                     attention_hidden_size=64, intermediate_size=128, context_length=16),
}


ARCHS = {
    'bert': encoder(tf.BertConfig, tf.BertModel, with_types=True),
    'distilbert': encoder(tf.DistilBertConfig, tf.DistilBertModel, dim=64, n_layers=2, n_heads=4, hidden_dim=128),
    'roberta': encoder(tf.RobertaConfig, tf.RobertaModel),
    'albert': encoder(tf.AlbertConfig, tf.AlbertModel, embedding_size=32),
    'electra': encoder(tf.ElectraConfig, tf.ElectraForSequenceClassification, out='logits', embedding_size=32),
    'deberta_v2': encoder(tf.DebertaV2Config, tf.DebertaV2Model, relative_attention=True,
                          pos_att_type=['p2c', 'c2p'], max_relative_positions=32, position_buckets=16),
    'gpt2': causal_lm(tf.GPT2Config, tf.GPT2LMHeadModel, n_embd=64, n_layer=2, n_head=4),
    'gpt_neox': causal_lm(tf.GPTNeoXConfig, tf.GPTNeoXForCausalLM, rotary_pct=0.5),
    'llama': causal_lm(tf.LlamaConfig, tf.LlamaForCausalLM, num_key_value_heads=2),
    'mistral': causal_lm(tf.MistralConfig, tf.MistralForCausalLM, num_key_value_heads=2, sliding_window=8),
    'qwen2': causal_lm(tf.Qwen2Config, tf.Qwen2ForCausalLM, num_key_value_heads=2),
    'phi': causal_lm(tf.PhiConfig, tf.PhiForCausalLM, partial_rotary_factor=0.5),
    'gemma': causal_lm(tf.GemmaConfig, tf.GemmaForCausalLM, num_key_value_heads=1, head_dim=16),
    't5': seq2seq(tf.T5Config, tf.T5ForConditionalGeneration, vocab_size=1000, d_model=64, d_kv=16, d_ff=128,
                  num_layers=2, num_heads=4),
    'bart': seq2seq(tf.BartConfig, tf.BartForConditionalGeneration, vocab_size=1000, d_model=64, encoder_layers=2,
                    decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                    decoder_ffn_dim=128),
    'whisper': whisper,
    'wav2vec2': wav2vec2,
    'vit': vision(tf.ViTConfig, tf.ViTModel, patch_size=8, **{k: v for k, v in SMALL.items() if k != 'vocab_size'}),
    'swin': vision(tf.SwinConfig, tf.SwinModel, patch_size=4, embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                   window_size=4),
    'convnext': vision(tf.ConvNextConfig, tf.ConvNextForImageClassification, out='logits', hidden_sizes=[16, 32, 64, 96],
                       depths=[1, 1, 2, 1]),
    'segformer': vision(tf.SegformerConfig, tf.SegformerForSemanticSegmentation, out='logits', num_encoder_blocks=2,
                        depths=[1, 1], sr_ratios=[4, 2], hidden_sizes=[16, 32], num_attention_heads=[1, 2],
                        decoder_hidden_size=32, strides=[4, 2], patch_sizes=[7, 3]),
    'clip': clip,
    'dinov2': dinov2,
    'depth_anything': depth_anything,
    'mobilevit': vision(tf.MobileViTConfig, tf.MobileViTForImageClassification, out='logits',
                        hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 16, 24, 24, 32, 40, 80]),
    'levit': vision(tf.LevitConfig, tf.LevitForImageClassification, out='logits', hidden_sizes=[32, 48, 64],
                    num_attention_heads=[2, 3, 4], depths=[1, 1, 1], key_dim=[8, 8, 8]),
    'mobilebert': encoder(tf.MobileBertConfig, tf.MobileBertModel, with_types=True, embedding_size=32,
                          intra_bottleneck_size=32, true_hidden_size=32, num_feedforward_networks=2),
    'hubert': speech_ctc(tf.HubertConfig, tf.HubertForCTC),
    'wavlm': speech_ctc(tf.WavLMConfig, tf.WavLMForCTC, num_buckets=32, max_bucket_distance=64),
    'encodec': encodec,
    'marian': seq2seq(tf.MarianConfig, tf.MarianMTModel, vocab_size=1000, d_model=64, encoder_layers=2,
                      decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                      decoder_ffn_dim=128, pad_token_id=1, decoder_start_token_id=1),
    'bert_base4': encoder(tf.BertConfig, tf.BertModel, with_types=True, **BASE),
    'gpt2_base4': causal_lm(tf.GPT2Config, tf.GPT2LMHeadModel, **BASE),
    'llama_base4': causal_lm(tf.LlamaConfig, tf.LlamaForCausalLM, num_key_value_heads=4, **BASE),
    **{name: noisy(build) for name, build in MORE.items()},
}


CACHED = ('gpt2', 'gpt_neox', 'llama', 'mistral', 'qwen2', 'phi', 'gemma', 't5', 'bart', 'whisper', 'marian', 'trocr',
          'speecht5', 'm2m100', 'pegasus', 'led', 'gptj', 'opt', 'bloom', 'falcon', 'mpt', 'phi3', 'qwen3', 'gemma2',
          'gemma3', 'olmo2', 'cohere', 'mamba', 'rwkv', 'olmoe', 'granitemoe', 'qwen2_moe', 'nemotron', 'stablelm',
          'starcoder2', 'granite')


def export(name, out):
    dynamo, arch = parse_name(name, ('hf_', 'hfd_'), ARCHS)
    torch.manual_seed(0)
    model, args, in_names, out_names = ARCHS[arch]()
    model.eval()
    path = os.path.join(out, name + '.onnx')
    # Decoders run without a KV cache object, whose outputs the exporters cannot take.
    extra = {'use_cache': False} if arch.removesuffix('_base4') in CACHED else {}
    wrapped = Wrapped(model, in_names, out_names, extra)
    # Own dimension names per input: decoder ids and images have their own lengths and batches.
    axes = {n: {0: f'{n}_batch'} | ({1: f'{n}_seq'} if a.dim() == 2 and a.dtype == torch.int64 else {})
            for n, a in zip(in_names, args)}
    with torch.no_grad():
        if dynamo:
            auto = torch.export.Dim.AUTO
            shapes = {'args': tuple({d: auto for d in dims} for dims in axes.values())}
            torch.onnx.export(wrapped, tuple(args), path, dynamo=True, input_names=in_names, output_names=out_names,
                              dynamic_shapes=shapes, external_data=False)
        else:
            torch.onnx.export(wrapped, tuple(args), path, dynamo=False, opset_version=17, input_names=in_names,
                              output_names=out_names, dynamic_axes=axes)
    for i, a in enumerate(args):
        np.save(os.path.join(out, f'{name}.input_{i}.npy'), a.numpy())
    print(f'{path} {os.path.getsize(path) / 1e6:.1f} MB', flush=True)


def main(out, names):
    export_each(out, names or [p + a for a in ARCHS if not a.endswith('_base4') for p in ('hf_', 'hfd_')], export)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
