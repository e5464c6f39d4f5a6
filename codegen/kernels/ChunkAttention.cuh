//===- ChunkAttention.cuh - Tensor-core attention of short prompt chunks --===//
//
// The attention of graph-sized steps that hold a short prompt chunk (a few
// tokens after a long cached prefix, say): paged_attention gives every
// (token, kv head) a block that walks the whole context for one token, so a
// chunk of 8 tokens reads its K/V 8 times; prefill_attention gives every
// (64 tokens, q head) a block that walks it alone, 32 blocks for 528
// places. chunk_attention packs the G = Hq / Hkv query heads of a kv head
// and up to 64 / G tokens of one sequence into the 64 rows of one
// tensor-core tile (prefill_detail::attendTiles, the main loop of
// prefill_attention), so each K/V tile is read once for all of them, and
// cuts the context into `splits` ranges of whole 64-key tiles, one block
// each (flash-decoding).
//
// Tiles come from the host (runtime/cuda/ChunkAttention.cpp) as (first
// token, tokens): consecutive tokens of one sequence at consecutive
// positions, or padding tokens (token_seq < 0, zeros out). Block (tile * Hkv
// + g, split) takes rows (token t0 + r / G, q head g * G + r % G). The
// splits of a (tile, kv head) run as one thread-block cluster (cluster
// dimension (1, splits, 1), splits <= 8): each block leaves its range's
// unnormalised state (m, l and O of its rows, fp32) in shared memory, and
// after a cluster barrier each block merges 1/splits of the outputs from
// all of them through distributed shared memory (as paged_attention's
// mergeCluster does for one token). With splits == 1 the block writes its
// rows itself. Masking is Hugging Face's, as in prefill_attention.
//
// The first K/V tile of a range that ends before the chunk's first position
// is requested before waitForPredecessor: no kernel of the step writes
// those positions (rope_kv_write writes the chunk's own, after them).
//
// chunk_attention_fp8 reads an fp8 (E4M3) cache with its per-(block, slot,
// kv head) scales through prefill_attention_fp8's PrefillFp8Kv. Head dims
// and the Softcap variants are prefill_attention's.
//
// Launch: TiledAttentionArgs (LaunchArgs.h, prefill_attention's), grid
// (tiles * Hkv, splits), cluster (1, splits, 1) when splits >
// 1, kPrefillThreads threads, PrefillAttentionShape<HD>::kSharedBytes (bf16)
// or ::kFp8SharedBytes (fp8) of dynamic shared memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "PrefillAttention.cuh"

namespace sol {
namespace kernels {

// The most splits of a chunk tile: its blocks merge in one cluster.
constexpr int kMaxChunkSplits = 8;
namespace chunk_detail {

// The cluster merge of the splits' states (see the header). The state goes
// into the block's K/V ring, free once attendTiles has returned.
template <int Hq, int HD, int G>
__device__ __forceinline__ void
mergeClusterRows(unsigned char *shared, prefill_detail::AttendState<HD> &st,
                 bf16 *out, prefill_detail::AttendRows rows, int splits,
                 const bf16 *sinks) {
  using Shape = PrefillAttentionShape<HD>;
  float *sO = reinterpret_cast<float *>(shared + Shape::kTileElems * 2);
  float *sM = sO + kPrefillRows * HD;
  float *sL = sM + kPrefillRows;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int qRows = rows.tokens * G;
  const int rowA = warp * 16 + lane / 4;
  const int rowB = rowA + 8;
  const float2 l = st.rowSums();
  // attendTiles ended with a barrier after the ring's last read.
#pragma unroll
  for (int j = 0; j < HD / 8; ++j) {
    const int col = j * 8 + (lane % 4) * 2;
    *reinterpret_cast<float2 *>(sO + rowA * HD + col) =
        make_float2(st.o[j][0], st.o[j][1]);
    *reinterpret_cast<float2 *>(sO + rowB * HD + col) =
        make_float2(st.o[j][2], st.o[j][3]);
  }
  if (lane % 4 == 0) {
    sM[rowA] = st.mA;
    sM[rowB] = st.mB;
    sL[rowA] = l.x;
    sL[rowB] = l.y;
  }
  clusterSync();
  const int per = ceilDiv(qRows * HD, splits);
  const int first = static_cast<int>(clusterRank()) * per;
  const int last = min(first + per, qRows * HD);
  const long long outRow = static_cast<long long>(Hq) * HD;
  for (int idx = first + threadIdx.x; idx < last; idx += kPrefillThreads) {
    const int r = idx / HD;
    out[(rows.t0 + r / G) * outRow + (rows.headBase + r % G) * HD + idx % HD] =
        __float2bfloat16_rn(mergeClusterStates<kMaxChunkSplits>(
            sM + r, sL + r, sO + idx, splits,
            sinkLog2Of(sinks, rows.headBase + r % G)));
  }
  clusterSync(); // the other blocks' reads of this block's state are done
}

template <int Hq, int Hkv, int HD, int BS, typename Kv>
__device__ __forceinline__ void
attendChunk(unsigned char *shared, const Kv &kv, bf16 *out, const bf16 *qkv,
            const int *positions, const int *token_seq, const int *block_tables,
            int max_blocks, float scale, int sliding_window, float softcap,
            const int2 *tiles, const bf16 *sinks) {
  using namespace prefill_detail;
  constexpr int G = Hq / Hkv;
  static_assert(G <= kPrefillRows, "chunk_attention: too many heads per group");
  const int2 tile = tiles[blockIdx.x / Hkv];
  const int g = blockIdx.x % Hkv;
  const AttendRows rows{tile.x, tile.y, g * G};
  const int split = blockIdx.y;
  const int splits = gridDim.y;
  // Uniform over the cluster: a padding tile's blocks all leave here.
  if (token_seq[rows.t0] < 0) {
    if (split == 0)
      writeZeros<Hq, HD, G>(out, rows);
    return;
  }
  const int seq = token_seq[rows.t0];
  const int firstPos = positions[rows.t0];
  const int lastPos = positions[rows.t0 + rows.tokens - 1];
  const int lo = sliding_window > 0 ? max(0, firstPos - sliding_window + 1) : 0;
  const int kvBegin = lo / kPrefillKeys * kPrefillKeys;
  const int kvEnd = lastPos + 1;
  const int kvTiles = ceilDiv(kvEnd - kvBegin, kPrefillKeys);
  const int per = ceilDiv(kvTiles, splits);
  const int tileFirst = min(split * per, kvTiles);
  const int tileEnd = min(tileFirst + per, kvTiles);
  const int *table = block_tables + static_cast<long long>(seq) * max_blocks;
  // The first tile may be fetched before the QKV projection and
  // rope_kv_write finish when it holds only positions before the chunk.
  const bool early = kvBegin + (tileFirst + 1) * kPrefillKeys <= firstPos;
  AttendState<HD> st;
  attendTiles<Hq, Hkv, HD, BS, G>(shared, kv, qkv, positions, table, rows, g,
                                  scale, sliding_window, softcap, kvBegin,
                                  kvEnd, tileFirst, tileEnd, early, st);
  if (splits == 1)
    writeNormalized<Hq, HD, G>(st, out, rows, sinks);
  else
    mergeClusterRows<Hq, HD, G>(shared, st, out, rows, splits, sinks);
}

} // namespace chunk_detail

template <int Hq, int Hkv, int HD, int BS, bool Softcap = false>
__global__ void __launch_bounds__(kPrefillThreads)
    chunk_attention(const __grid_constant__ TiledAttentionArgs args) {
  static_assert(Hq % Hkv == 0, "chunk_attention: Hq must be k * Hkv");
  allowDependentLaunch();
  extern __shared__ __align__(128) unsigned char chunkShared[];
  const prefill_detail::PrefillBf16Kv<Hkv, HD, BS> kv{
      static_cast<const bf16 *>(args.kCache),
      static_cast<const bf16 *>(args.vCache)};
  chunk_detail::attendChunk<Hq, Hkv, HD, BS>(
      chunkShared, kv, args.out, args.qkv, args.positions, args.tokenSeq,
      args.blockTables, args.maxBlocks, args.scale, args.slidingWindow,
      Softcap ? args.softcap : 0.0f, args.tiles, args.sinks);
}

// k_scales, v_scales: [num_blocks, BS, Hkv] float32 (PrefillAttention.cuh).
template <int Hq, int Hkv, int HD, int BS, bool Softcap = false>
__global__ void __launch_bounds__(kPrefillThreads)
    chunk_attention_fp8(const __grid_constant__ TiledAttentionArgs args) {
  static_assert(Hq % Hkv == 0, "chunk_attention_fp8: Hq must be k * Hkv");
  allowDependentLaunch();
  extern __shared__ __align__(128) unsigned char chunkShared[];
  const auto kv = prefill_detail::fp8Kv<Hkv, HD, BS>(
      chunkShared, static_cast<const unsigned char *>(args.kCache),
      static_cast<const unsigned char *>(args.vCache), args.kScales,
      args.vScales);
  chunk_detail::attendChunk<Hq, Hkv, HD, BS>(
      chunkShared, kv, args.out, args.qkv, args.positions, args.tokenSeq,
      args.blockTables, args.maxBlocks, args.scale, args.slidingWindow,
      Softcap ? args.softcap : 0.0f, args.tiles, args.sinks);
}

} // namespace kernels
} // namespace sol
