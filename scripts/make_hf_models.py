#!/usr/bin/env python3
"""Hugging Face transformers architectures with small configs and seeded random
weights, exported by both PyTorch exporters: `hf_NAME` by the TorchScript one
(opset 17), `hfd_NAME` by the default one of PyTorch 2 (`dynamo=True`). These
graphs differ from hand-written models: attention masks built in the graph
(Expand / Where / large negative fills), relative position buckets (T5,
DeBERTa), rotary embeddings computed from positions, tied embeddings, encoder-
decoder pairs, convolutional feature extractors (Whisper, wav2vec2).
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


def encoder(config_cls, model_cls, with_types=False, out='last_hidden_state', batch=2, seq=16, **cfg):
    def build():
        model = model_cls(config_cls(**{**SMALL, **cfg}))
        names = ['input_ids', 'attention_mask'] + (['token_type_ids'] if with_types else [])
        return model, text_inputs(batch, seq, with_types=with_types), names, [out]
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
}


CACHED = ('gpt2', 'gpt_neox', 'llama', 'mistral', 'qwen2', 'phi', 'gemma', 't5', 'bart', 'whisper', 'marian')


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
