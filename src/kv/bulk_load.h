// Internal: the table files and MANIFEST of a bulk load (ibdkit/kv/store.h, Store::BeginBulkLoad).
//
// A LevelDB database is a set of sorted table files listed, level by level, in a MANIFEST that
// the file CURRENT names. A bulk load writes the records straight into table files (LevelDB's own
// TableBuilder, with the internal keys and filters LevelDB's reads expect), all at the deepest
// level, then a MANIFEST that lists only them; renaming a new CURRENT into place switches the
// database to them in one step. LevelDB's log, memtable and level-0 compactions are never involved.
#pragma once

#include "kv/store.h"

#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/table_builder.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ibdkit {

struct BulkLoad::Impl {
    /// `options` are the database's (block size, restart interval, compression); `filter` its
    /// user-key filter policy (or null). File numbers start at `first_file_number`.
    Impl(std::string dir, const leveldb::Options& options, const leveldb::FilterPolicy* filter, std::size_t parts,
         uint64_t first_file_number, bool sync);
    ~Impl();

    StoreStatus Add(std::size_t part, std::span<const std::byte> key, std::span<const std::byte> value);
    /// Finishes the part's open table; later records of the part are refused.
    StoreStatus FinishPart(std::size_t part);
    /// Finishes every part's open table, then writes a MANIFEST listing all tables. Returns the
    /// MANIFEST's file number in *manifest.
    StoreStatus Finish(uint64_t* manifest);
    /// Points CURRENT at MANIFEST `manifest` (a temporary file renamed over it, then the directory
    /// synced when `sync`).
    StoreStatus Install(uint64_t manifest);

    struct FileMeta {
        uint64_t number{0};
        uint64_t size{0};
        std::string smallest, largest; ///< internal keys
    };
    /// One part's writer. On cache lines of its own: parts are filled on different threads.
    struct alignas(64) Part {
        std::unique_ptr<leveldb::WritableFile> file;
        std::unique_ptr<leveldb::TableBuilder> builder;
        FileMeta meta;
        std::string ikey;     ///< the internal key of the last record added
        std::string next;     ///< scratch: the internal key being made
        bool any{false};
        bool finished{false};
        StoreStatus status;
    };

    StoreStatus FinishFile(Part& p);

    const std::string m_dir;
    leveldb::Options m_options;
    std::unique_ptr<leveldb::Comparator> m_order;
    std::unique_ptr<leveldb::FilterPolicy> m_filter;
    const bool m_sync; ///< each file synced before it is listed, the directory after the rename
    std::vector<Part> m_parts;
    std::atomic<uint64_t> m_next_file;
    std::mutex m_mutex; ///< guards m_files
    std::vector<FileMeta> m_files;
};

/// The highest file number among a LevelDB directory's files (tables, logs, MANIFESTs, temporaries);
/// 0 when there is none.
uint64_t HighestFileNumber(const std::string& dir);

} // namespace ibdkit
