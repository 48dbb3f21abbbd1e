// The gate arithmetic of one LSTM or GRU step for one batch row, with the
// default activations (sigmoid for the gates, tanh for the candidate and the
// cell output), in one pass of 16-float AVX-512 vectors. A step is a tiny
// GEMM and then this; written as separate scalar loops (GCC keeps them scalar
// at -O2: it cannot rule out aliasing) it took as long as the GEMM.
//
// Each function returns false, having done nothing, where the CPU lacks
// AVX-512: the caller's general loops run instead.
#pragma once
#include <cstdint>

namespace onyx {

struct LstmGateRow {
  float* gates = nullptr;           // [4H]: h x R^T in ONNX's order (i, o, f, c~); overwritten
  const float* x = nullptr;         // [4H]: x x W^T plus both biases
  const float* peephole = nullptr;  // [3H] (i, o, f), or null
  float clip = 0;                   // 0: none
  bool input_forget = false;        // f = 1 - i
  float* c = nullptr;               // [H]: the cell state, updated
  float* h = nullptr;               // [H]: the new hidden state
  int64_t H = 0;
};

// i, f = sigmoid(x + g (+ p * c)), c~ = tanh(x + g), c = f c + i c~,
// o = sigmoid(x + g (+ p * c)), h = o tanh(c); clip bounds the gates' inputs.
bool lstm_gate_row(const LstmGateRow& row);

// A GRU step's first half over gates[0, 2H) (z, r): z, r = sigmoid(x + g),
// written back; then out = r * (gates[2H, 3H) + hidden_bias) with
// linear_before_reset (the hidden rows' product is in gates already), else
// out = r * h (to be multiplied by R_h next).
bool gru_reset_row(float* gates, const float* x, const float* h, const float* hidden_bias, bool linear_before_reset,
                   float clip, float* out, int64_t H);

// The second half: n = tanh(x_n + t (+ bias)), h = (1 - z) n + z h.
// bias may be null.
bool gru_update_row(const float* z, const float* x_n, const float* t, const float* bias, float clip, float* h,
                    int64_t H);

}  // namespace onyx
