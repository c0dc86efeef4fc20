// The loader's side of the C++ wrapper (exceptions mode): sets of files as one Reader
// (shard_count, shard_path, Component::location, shard_mapping), Writer::create_sharded,
// load_batch over containers of zt_load_request, open_fd, prefetch / release, mapping.
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "support.hpp"

// zTensor v1.2.0 (the library writes v2 by default): these tests check what v1.2 keeps
// (objects in the order written, 64-byte alignment, typed attributes with their widths).
static zt::writer_options v12(bool durable = true) {
  zt::writer_options o;
  o.durable = durable;
  o.version = zt::writer_options::file_version::v1_2;
  return o;
}

namespace {

static_assert(ZT_CPP_EXCEPTIONS == 1, "this file tests the exceptions mode");

std::vector<float> values(std::size_t n, float seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = seed * 1000.0f + static_cast<float>(i);
  return v;
}

// A run's fields as one comparable (and printable) value.
std::tuple<std::size_t, std::size_t, std::size_t, std::uint64_t> run_of(const zt_object_run& r) {
  return {r.first, r.period, r.repeats, r.stride};
}

/// Writes a set of four 4000-byte tensors, one a shard; returns the index's path.
std::string write_set(const std::string& base) {
  zt::Writer w = zt::Writer::create_sharded(base, 6000, v12(false));
  for (int i = 0; i < 4; ++i) {
    w.add("t" + std::to_string(i), values(1000, static_cast<float>(i)), {1000},
          i == 1 ? zt::write_options::zstd(1) : zt::write_options{});
  }
  w.finish();
  return base + ".zt.index.json";
}

TEST(Shards, AWrittenSetOpensAsOneReader) {
  const std::string base = "cpp_set_" + std::to_string(::getpid());
  const std::string index = write_set(base);
  zt::Reader r = zt::Reader::open(index);
  EXPECT_EQ(r.file_format(), "zt");
  ASSERT_EQ(r.size(), 4u);
  ASSERT_EQ(r.shard_count(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string file = base + "-0000" + std::to_string(i + 1) + "-of-00004.zt";
    EXPECT_EQ(r.shard_path(i), file);
    zt::Object o = r["t" + std::to_string(i)];
    const zt_location loc = o.component("data").location();
    EXPECT_EQ(loc.shard, i);
    EXPECT_EQ(loc.offset, 64u);
    EXPECT_EQ(o.read<float>(), values(1000, static_cast<float>(i)));
    // The location is meaningful in the shard's own bytes (raw ones: the values).
    const std::vector<unsigned char> bytes = zt_test::slurp(file);
    ASSERT_GE(bytes.size(), loc.offset + loc.length);
    if (i != 1) {
      EXPECT_EQ(std::memcmp(bytes.data() + loc.offset, values(1000, static_cast<float>(i)).data(), 4000), 0);
    }
    zt::span<const std::byte> map = r.shard_mapping(i);
    ASSERT_EQ(map.size(), bytes.size());
    EXPECT_EQ(std::memcmp(map.data(), bytes.data(), bytes.size()), 0);
    r.prefetch(o.index());
    r.evict(o.index());
  }
  EXPECT_THROW(r.shard_path(4), zt::not_found);
  EXPECT_THROW(r.shard_mapping(4), zt::not_found);
  EXPECT_THROW(r.mapping(), zt::not_found);
  EXPECT_EQ(r.attributes_json(), "{\"total_size\":16000}");

  // One batch over the whole set, from a vector and from an array.
  std::vector<std::vector<float>> got(4, std::vector<float>(1000));
  std::vector<zt_load_request> requests(4);
  for (std::size_t i = 0; i < 4; ++i) {
    requests[i].object = r["t" + std::to_string(i)].index();
    requests[i].dst = got[i].data();
    requests[i].dst_size = 4000;
    requests[i].status = 77;
  }
  r.load_batch(requests);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(requests[i].status, static_cast<std::uint32_t>(ZT_OK));
    EXPECT_EQ(got[i], values(1000, static_cast<float>(i)));
  }
  std::array<zt_load_request, 2> two{};
  std::vector<double> as_f64(1000);
  float small[4] = {};
  two[0].object = 1;
  two[0].dst = as_f64.data();
  two[0].dst_size = 8000;
  two[0].flags = ZT_LOAD_CONVERT;
  two[0].dtype = ZT_F64;
  two[1].object = 3;
  two[1].dst = small;
  two[1].dst_size = sizeof small;
  two[1].flags = ZT_LOAD_RANGE;
  two[1].offset = 8;
  r.load_batch(two, 1);
  EXPECT_EQ(as_f64[999], 1999.0);
  EXPECT_EQ(small[0], 3002.0f);
  EXPECT_EQ(small[3], 3005.0f);
  // A failing request: the batch throws, that request's status says why, others are done.
  two[1].dst = as_f64.data();
  two[1].dst_size = 5000;  // from byte 8: past the component's 4000
  two[0].status = 77;
  EXPECT_THROW(r.load_batch(two), zt::invalid_argument);
  EXPECT_EQ(two[0].status, static_cast<std::uint32_t>(ZT_OK));
  EXPECT_EQ(two[1].status, static_cast<std::uint32_t>(ZT_ERR_INVALID_ARGUMENT));

  r.close();
  for (int i = 1; i <= 4; ++i) zt_test::remove(base + "-0000" + std::to_string(i) + "-of-00004.zt");
  zt_test::remove(index);
}

TEST(Shards, LayoutsNamesObjectsAndThePool) {
  const std::string base = "cpp_lay_" + std::to_string(::getpid());
  const std::string index = write_set(base);
  zt::Reader r = zt::Reader::open(index);
  // Each shard has its own data section: every component lies in its own shard's.
  for (std::size_t i = 0; i < r.shard_count(); ++i) {
    const zt::file_layout l = r.shard_layout(i);
    EXPECT_EQ(l.data_offset, 0u);  // zTensor offsets are absolute
    EXPECT_EQ(l.alignment, 64u);
    const zt_location loc = r["t" + std::to_string(i)].component("data").location();
    EXPECT_EQ(loc.shard, i);
    EXPECT_EQ((loc.offset - l.data_offset) % l.alignment, 0u);
  }
  EXPECT_THROW(r.shard_layout(4), zt::not_found);
  // Names and entries in one call each, in the reader's object order.
  const std::vector<std::string_view> names = r.names();
  ASSERT_EQ(names.size(), 4u);
  const std::vector<zt_object_entry> all = r.objects();
  ASSERT_EQ(all.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(names[i], r.at(i).name());
    EXPECT_EQ(std::string_view(all[i].name), names[i]);
    EXPECT_STREQ(all[i].format, "dense");
    ASSERT_EQ(all[i].ndim, 1u);
    EXPECT_EQ(all[i].shape[0], 1000u);
    EXPECT_EQ(all[i].dtype, static_cast<std::uint32_t>(ZT_F32));
  }
  const std::vector<zt_object_entry> last = r.objects(3, 1);
  EXPECT_EQ(std::string_view(last[0].name), names[3]);
  EXPECT_THROW(r.objects(3, 2), zt::invalid_argument);
  // The same column by column: a set's four shards, one raw and one zstd tensor a shard.
  const zt::object_columns cols = r.columns();
  ASSERT_EQ(cols.flags.size(), 4u);
  ASSERT_EQ(cols.dims.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cols.offset[i], all[i].offset);
    EXPECT_EQ(cols.decoded_length[i], 4000u);
    EXPECT_EQ(cols.dtype[i], static_cast<std::uint32_t>(ZT_F32));
    EXPECT_EQ(cols.shard[i], all[i].shard);
    EXPECT_EQ(cols.ndim[i], 1u);
    EXPECT_EQ(cols.dims[i], 1000u);
    const std::uint32_t plain = all[i].encoding == ZT_ENCODING_RAW ? ZT_OBJECT_PLAIN : 0u;
    EXPECT_EQ(cols.flags[i], ZT_OBJECT_DENSE | plain);
  }
  const zt::object_columns tail = r.columns(2, 2);
  ASSERT_EQ(tail.offset.size(), 2u);
  EXPECT_EQ(tail.offset[1], all[3].offset);
  EXPECT_THROW(r.columns(3, 2), zt::invalid_argument);
  // Runs: tensors in four files are not alike; one run of one repeat.
  const std::vector<zt_object_run> runs = r.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(run_of(runs[0]), run_of({0, 4, 1, 0}));
  const std::vector<zt_object_run> middle = r.runs(1, 2);
  ASSERT_EQ(middle.size(), 1u);
  EXPECT_EQ(run_of(middle[0]), run_of({1, 2, 1, 0}));
  EXPECT_THROW(r.runs(3, 2), zt::invalid_argument);
  // The pool: sized, read back, reset to one thread per core.
  zt::pool::set_threads(3);
  EXPECT_EQ(zt::pool::thread_count(), 3u);
  EXPECT_EQ(r["t1"].read<float>(), values(1000, 1.0f));  // a zstd shard, decoded on it
  EXPECT_THROW(zt::pool::set_threads(100000), zt::invalid_argument);
  EXPECT_EQ(zt::pool::thread_count(), 3u);
  zt::pool::set_threads(0);
  EXPECT_GE(zt::pool::thread_count(), 1u);
  r.close();
  for (int i = 1; i <= 4; ++i) zt_test::remove(base + "-0000" + std::to_string(i) + "-of-00004.zt");
  zt_test::remove(index);
}

TEST(Shards, RunsOfAFileThatRepeats) {
  const std::string path = zt_test::temp_path("runs");
  {
    zt::Writer w = zt::Writer::create(path, v12());
    w.add("first", values(3, 1.0f), {3});
    for (int layer = 0; layer < 5; ++layer) {  // 64 and 128 bytes: 192 bytes a layer
      w.add("l" + std::to_string(layer) + ".a", values(16, 2.0f), {4, 4});
      w.add("l" + std::to_string(layer) + ".b", values(32, 3.0f), {32});
    }
    w.finish();
  }
  zt::Reader r = zt::Reader::open(path);
  const std::vector<zt_object_run> runs = r.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(run_of(runs[0]), run_of({0, 1, 1, 0}));
  EXPECT_EQ(run_of(runs[1]), run_of({1, 2, 5, 192}));
  const std::vector<zt_object_entry> all = r.objects();
  EXPECT_EQ(all[1 + 2 * 4].offset, all[1].offset + 4 * runs[1].stride);
  EXPECT_EQ(all[2 + 2 * 4].offset, all[2].offset + 4 * runs[1].stride);
  r.close();
  zt_test::remove(path);
}

TEST(Shards, OptionsReachTheLibrary) {
  const std::string base = "cpp_opts_" + std::to_string(::getpid());
  const std::string index = write_set(base);
  zt::open_options all;
  all.all_shards = true;
  all.populate = true;
  zt::Reader r = zt::Reader::open(index, all);
  zt::Reader lazy = zt::Reader::open(index);
  // Every shard is held open from the open: removing one stops no reader. With
  // all_shards every shard was mapped at open; by default a shard is mapped (and its
  // size checked) when first read, so a shard that grew in place since is refused then.
  const std::string last = base + "-00004-of-00004.zt";
  {
    FILE* f = std::fopen(last.c_str(), "ab");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fputc(0, f), 0);
    ASSERT_EQ(std::fclose(f), 0);
  }
  zt_test::remove(last);
  EXPECT_EQ(r["t3"].read<float>(), values(1000, 3.0f));
  EXPECT_THROW(lazy["t3"].read<float>(), zt::format_error);
  for (int i = 1; i <= 3; ++i) zt_test::remove(base + "-0000" + std::to_string(i) + "-of-00004.zt");
  zt_test::remove(index);
}

TEST(Shards, OpenFdMappingAndOneFile) {
  const std::string path = zt_test::temp_path("fd");
  {
    zt::Writer w = zt::Writer::create(path, v12());
    w.add("x", values(16, 1.0f), {16});
    w.finish();
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  zt::Reader r = zt::Reader::open_fd(fd);
  ASSERT_EQ(::close(fd), 0);  // the reader has its own duplicate
  EXPECT_EQ(r["x"].read<float>(), values(16, 1.0f));
  zt::span<const std::byte> map = r.mapping();
  EXPECT_EQ(map.size(), zt_test::slurp(path).size());
  EXPECT_EQ(r.shard_count(), 1u);
  EXPECT_THROW(r.shard_path(0), zt::not_found);  // opened from a descriptor: no path
  const zt_location loc = r["x"].component("data").location();
  EXPECT_EQ(loc.shard, 0u);
  float first = 0;
  std::memcpy(&first, map.data() + loc.offset, sizeof first);
  EXPECT_EQ(first, 1000.0f);

  // take_fd: the reader closes the descriptor.
  zt::open_options take;
  take.take_fd = true;
  const int fd2 = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd2, 0);
  {
    zt::Reader owned = zt::Reader::open_fd(fd2, take);
    EXPECT_EQ(owned.size(), 1u);
  }
  EXPECT_EQ(::fcntl(fd2, F_GETFD), -1);
  EXPECT_THROW(zt::Reader::open_fd(-1), zt::invalid_argument);

  zt::open_options no_mmap;
  no_mmap.no_mmap = true;
  EXPECT_THROW(zt::Reader::open(path, no_mmap).mapping(), zt::not_found);
  zt_test::remove(path);

  // A GGUF split alone, when asked; the whole set otherwise.
  const std::string split = zt_test::vectors_dir() + "/sets/gguf/split-00002-of-00003.gguf";
  zt::open_options one;
  one.one_file = true;
  EXPECT_EQ(zt::Reader::open(split, one).size(), 2u);
  zt::Reader set = zt::Reader::open(split);
  EXPECT_EQ(set.size(), 5u);
  EXPECT_EQ(set.shard_count(), 3u);
  EXPECT_EQ(set["out.weight"].component("data").location().shard, 2u);
}

TEST(Shards, ShardedWriterErrors) {
  EXPECT_THROW(zt::Writer::create_sharded("x", 0), zt::invalid_argument);
  zt::Writer w = zt::Writer::create_sharded("cpp_empty_" + std::to_string(::getpid()), 100, v12(false));
  EXPECT_THROW(w.finish(), zt::state_error);
}

}  // namespace
