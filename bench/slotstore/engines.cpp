#include "engines.h"

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <sqlite3.h>

#include <mutex>

#include "common/fs.h"
#include "slotstore/slotstore.h"

namespace strata::bench {

namespace {

using namespace strata::slotstore;

std::string vote_name(size_t i) {
  return "queue-" + std::to_string(i % 500);
}
std::string vote_node(size_t i) {
  return "rabbit@node-" + std::to_string(i % 5);
}

// ---------------------------------------------------------------- slotstore

Schema raft_schema() {
  Schema s;
  s.max_key_len = 64;
  s.fields = {
      {"current_term", FieldType::u64(), Frequency::low},
      {"voted_for", FieldType::tuple_of({FieldType::interned(64), FieldType::interned(64)}),
       Frequency::low},
      {"last_applied", FieldType::u64(), Frequency::high},
  };
  return s;
}

class SlotStoreEngine final : public Engine {
 public:
  std::string name() const override { return "slotstore"; }

  Status create(const std::string& dir, const std::vector<std::string>& keys) override {
    Options o;
    o.slots = uint32_t(keys.size());
    o.strings = 1024;
    o.error_if_exists = true;
    STRATA_ASSIGN_OR_RETURN(store_, SlotStore::open(posix_fs(), path(dir), raft_schema(), o));
    WriteBatch b;
    for (size_t i = 0; i < keys.size(); ++i) {
      b.put(keys[i], {set(0, Value::u64(1)),
                      set(1, Value::tuple({Scalar(vote_name(i)), Scalar(vote_node(i))})),
                      set(2, Value::u64(1))});
      if (b.size() == 1000 || i + 1 == keys.size()) {
        STRATA_TRY(store_->write_batch(b));
        b.clear();
      }
    }
    return store_->sync();
  }

  Status open(const std::string& dir) override {
    Options o;
    o.create_if_missing = false;
    STRATA_ASSIGN_OR_RETURN(store_, SlotStore::open(posix_fs(), path(dir), raft_schema(), o));
    return Status::OK();
  }

  Result<size_t> load_all() override {
    STRATA_ASSIGN_OR_RETURN(auto all, store_->read_all());
    return all.size();
  }

  Status high(const std::string& key, uint64_t applied) override {
    return store_->put(key, {set(2, Value::u64(applied))});
  }
  Status durable(const std::string& key, uint64_t term) override {
    return store_->put(key, {set(0, Value::u64(term)), clear(1)});
  }
  Status close() override {
    if (!store_) return Status::OK();
    Info i = store_->info();
    stats_ = fmt::format("{} WAL half switches, {} compactions, {} writer waits for compaction",
                         i.wal_switches, i.compactions, i.compaction_waits);
    Status s = store_->close();
    store_.reset();
    return s;
  }
  std::string stats() const override { return stats_; }

 private:
  static std::string path(const std::string& dir) { return dir + "/meta.slots"; }
  std::string stats_;
  std::unique_ptr<SlotStore> store_;
};

// ---------------------------------------------------------------- SQLite

Error sqlite_error(sqlite3* db, const std::string& what) {
  return Error(Errc::io, fmt::format("sqlite {}: {}", what, db ? sqlite3_errmsg(db) : "?"));
}

class SqliteEngine final : public Engine {
 public:
  ~SqliteEngine() override { (void)close(); }
  std::string name() const override { return "sqlite"; }

  Status create(const std::string& dir, const std::vector<std::string>& keys) override {
    STRATA_TRY(connect(dir));
    STRATA_TRY(exec(durable_db_,
                    "CREATE TABLE meta(uid TEXT PRIMARY KEY, term INTEGER, voted_name TEXT, "
                    "voted_node TEXT, last_applied INTEGER) WITHOUT ROWID"));
    STRATA_TRY(exec(durable_db_, "BEGIN"));
    sqlite3_stmt* ins = nullptr;
    if (sqlite3_prepare_v2(durable_db_, "INSERT INTO meta VALUES(?,1,?,?,1)", -1, &ins, nullptr) !=
        SQLITE_OK) {
      return sqlite_error(durable_db_, "prepare insert");
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      std::string n = vote_name(i), d = vote_node(i);
      sqlite3_bind_text(ins, 1, keys[i].data(), int(keys[i].size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(ins, 2, n.data(), int(n.size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(ins, 3, d.data(), int(d.size()), SQLITE_TRANSIENT);
      if (sqlite3_step(ins) != SQLITE_DONE) {
        sqlite3_finalize(ins);
        return sqlite_error(durable_db_, "insert");
      }
      sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    STRATA_TRY(exec(durable_db_, "COMMIT"));
    return prepare();
  }

  Status open(const std::string& dir) override {
    STRATA_TRY(connect(dir));
    return prepare();
  }

  Result<size_t> load_all() override {
    struct Row {
      std::string uid, name, node;
      int64_t term, applied;
    };
    std::vector<Row> rows;
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(durable_db_, "SELECT * FROM meta", -1, &q, nullptr) != SQLITE_OK) {
      return sqlite_error(durable_db_, "prepare select");
    }
    int rc;
    auto text = [&](int c) {
      const unsigned char* t = sqlite3_column_text(q, c);
      return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
    };
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      rows.push_back(
          Row{text(0), text(2), text(3), sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 4)});
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return sqlite_error(durable_db_, "select");
    return rows.size();
  }

  Status high(const std::string& key, uint64_t applied) override {
    std::lock_guard<std::mutex> l(mu_);
    sqlite3_bind_int64(high_stmt_, 1, int64_t(applied));
    sqlite3_bind_text(high_stmt_, 2, key.data(), int(key.size()), SQLITE_STATIC);
    int rc = sqlite3_step(high_stmt_);
    sqlite3_reset(high_stmt_);
    if (rc != SQLITE_DONE) return sqlite_error(high_db_, "update last_applied");
    return Status::OK();
  }

  Status durable(const std::string& key, uint64_t term) override {
    std::lock_guard<std::mutex> l(mu_);
    sqlite3_bind_int64(durable_stmt_, 1, int64_t(term));
    sqlite3_bind_text(durable_stmt_, 2, key.data(), int(key.size()), SQLITE_STATIC);
    int rc = sqlite3_step(durable_stmt_);
    sqlite3_reset(durable_stmt_);
    if (rc != SQLITE_DONE) return sqlite_error(durable_db_, "update term");
    return Status::OK();
  }

  Status close() override {
    for (sqlite3_stmt* s : {high_stmt_, durable_stmt_}) {
      if (s) sqlite3_finalize(s);
    }
    high_stmt_ = durable_stmt_ = nullptr;
    for (sqlite3* db : {high_db_, durable_db_}) {
      if (db) sqlite3_close(db);
    }
    high_db_ = durable_db_ = nullptr;
    return Status::OK();
  }

 private:
  static Status exec(sqlite3* db, const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      Error e(Errc::io, fmt::format("sqlite {}: {}", sql, err ? err : "?"));
      sqlite3_free(err);
      return e;
    }
    return Status::OK();
  }

  Status connect(const std::string& dir) {
    std::string path = dir + "/meta.sqlite";
    for (auto [db, sync] : {std::pair{&durable_db_, "FULL"}, std::pair{&high_db_, "NORMAL"}}) {
      if (sqlite3_open_v2(path.c_str(), db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
          SQLITE_OK) {
        return sqlite_error(*db, "open " + path);
      }
      STRATA_TRY(exec(*db, "PRAGMA journal_mode=WAL"));
      STRATA_TRY(exec(*db, fmt::format("PRAGMA synchronous={}", sync).c_str()));
      sqlite3_busy_timeout(*db, 10000);
    }
    return Status::OK();
  }

  Status prepare() {
    if (sqlite3_prepare_v2(high_db_, "UPDATE meta SET last_applied=? WHERE uid=?", -1, &high_stmt_,
                           nullptr) != SQLITE_OK) {
      return sqlite_error(high_db_, "prepare");
    }
    if (sqlite3_prepare_v2(durable_db_,
                           "UPDATE meta SET term=?, voted_name=NULL, voted_node=NULL WHERE uid=?",
                           -1, &durable_stmt_, nullptr) != SQLITE_OK) {
      return sqlite_error(durable_db_, "prepare");
    }
    return Status::OK();
  }

  std::mutex mu_;
  sqlite3* durable_db_ = nullptr;
  sqlite3* high_db_ = nullptr;
  sqlite3_stmt* high_stmt_ = nullptr;
  sqlite3_stmt* durable_stmt_ = nullptr;
};

// ---------------------------------------------------------------- RocksDB

Error rocks_error(const rocksdb::Status& s, const std::string& what) {
  return Error(Errc::io, fmt::format("rocksdb {}: {}", what, s.ToString()));
}

class RocksEngine final : public Engine {
 public:
  std::string name() const override { return "rocksdb"; }

  Status create(const std::string& dir, const std::vector<std::string>& keys) override {
    STRATA_TRY(connect(dir, true));
    rocksdb::WriteBatch b;
    rocksdb::WriteOptions wo;
    wo.sync = true;
    for (size_t i = 0; i < keys.size(); ++i) {
      b.Put(keys[i] + "/term", "1");
      b.Put(keys[i] + "/vote", vote_name(i) + "," + vote_node(i));
      b.Put(keys[i] + "/applied", "1");
      if ((i + 1) % 1000 == 0 || i + 1 == keys.size()) {
        auto s = db_->Write(wo, &b);
        if (!s.ok()) return rocks_error(s, "populate");
        b.Clear();
      }
    }
    return Status::OK();
  }

  Status open(const std::string& dir) override { return connect(dir, false); }

  Result<size_t> load_all() override {
    std::vector<std::pair<std::string, std::string>> rows;
    size_t records = 0;  // every key has a term; a vote may have been cleared
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      rows.emplace_back(it->key().ToString(), it->value().ToString());
      records += it->key().ends_with("/term");
    }
    if (!it->status().ok()) return rocks_error(it->status(), "scan");
    return records;
  }

  Status high(const std::string& key, uint64_t applied) override {
    rocksdb::WriteOptions wo;
    auto s = db_->Put(wo, key + "/applied", std::to_string(applied));
    return s.ok() ? Status::OK() : Status(rocks_error(s, "put"));
  }

  Status durable(const std::string& key, uint64_t term) override {
    rocksdb::WriteBatch b;
    b.Put(key + "/term", std::to_string(term));
    b.Delete(key + "/vote");
    rocksdb::WriteOptions wo;
    wo.sync = true;
    auto s = db_->Write(wo, &b);
    return s.ok() ? Status::OK() : Status(rocks_error(s, "write"));
  }

  Status close() override {
    if (!db_) return Status::OK();
    auto s = db_->Close();
    db_.reset();
    return s.ok() ? Status::OK() : Status(rocks_error(s, "close"));
  }

 private:
  Status connect(const std::string& dir, bool create) {
    rocksdb::Options o;
    o.create_if_missing = create;
    o.error_if_exists = create;
    o.IncreaseParallelism(2);
    rocksdb::DB* db = nullptr;
    auto s = rocksdb::DB::Open(o, dir + "/rocksdb", &db);
    if (!s.ok()) return rocks_error(s, "open");
    db_.reset(db);
    return Status::OK();
  }

  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

std::unique_ptr<Engine> make_slotstore() {
  return std::make_unique<SlotStoreEngine>();
}
std::unique_ptr<Engine> make_sqlite() {
  return std::make_unique<SqliteEngine>();
}
std::unique_ptr<Engine> make_rocksdb() {
  return std::make_unique<RocksEngine>();
}

}  // namespace strata::bench
