//===- Graph.h - Captured CUDA graphs and their executable form -*- C++ -*-===//
//
// Decode steps are captured once per batch-size bucket (Stream::beginCapture
// ... endCapture) and replayed with one launch, which removes the per-kernel
// launch gaps that dominate small-batch decode.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

namespace sol::cuda {

class Stream;
class GraphExec;

class Graph {
public:
  /// Takes ownership of `graph`.
  explicit Graph(CUgraph graph) : graph_(graph) {}
  ~Graph();
  Graph(Graph &&other) noexcept;
  Graph &operator=(Graph &&other) noexcept;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  CUgraph handle() const { return graph_; }
  GraphExec instantiate() const;

private:
  void reset() noexcept;
  CUgraph graph_ = nullptr;
};

class GraphExec {
public:
  /// Takes ownership of `exec`.
  explicit GraphExec(CUgraphExec exec) : exec_(exec) {}
  ~GraphExec();
  GraphExec(GraphExec &&other) noexcept;
  GraphExec &operator=(GraphExec &&other) noexcept;
  GraphExec(const GraphExec &) = delete;
  GraphExec &operator=(const GraphExec &) = delete;

  CUgraphExec handle() const { return exec_; }
  void launch(const Stream &stream) const;

private:
  void reset() noexcept;
  CUgraphExec exec_ = nullptr;
};

} // namespace sol::cuda
