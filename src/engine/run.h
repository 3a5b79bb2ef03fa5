// src/engine/run.h — the engine's run over a block source (private to the engine; the public view is
// engine/engine.h, the design docs/engine.md). The phases, in src/engine/run.cpp:
//
//   RunEngine       threads, the chainstate's flush settings, database failures as errors
//   RunPhases       in order: Prepare, RecoverInterruptedFlush, DisconnectStaleBranch, ResumeHeight,
//                   the connect loop (ConnectInline or ConnectPipelined, each block through
//                   ConnectLoop::ConnectStep), ConnectLoop::Finish (the final flush)
//   RecordDiskTip   the tip and statistics of what is on disk
//
// The source (block_source.h) produces blocks in height order; the pipeline (pipeline.h) decodes
// and checks them on other threads; the connect loop (connect_loop.h) connects them.
#pragma once

#include "block_source.h"
#include "connector.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/engine/engine.h>

namespace ibdkit::engine {

/// Runs the engine over `src` into `cs`, filling `res` (whose source-specific fields the caller
/// set). Database failures (StoreError, a corrupt coin) become errors naming the chainstate.
Result<EngineResult> RunEngine(const EngineOptions& o, const ChainParams& params, BlockSource& src, ChainstateHandle& cs,
                               EngineResult res);

} // namespace ibdkit::engine
