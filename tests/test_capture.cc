// Capture file layout (TERSE_CAPTURE): what capture_open/record/close write,
// read back with plain HDF5 calls the way any user's script would.
#include "capture/capture.h"
#include "capture/capture_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using terse::h5::Handle;

std::string temp_dir() {
    char tmpl[] = "/tmp/terse_capture_XXXXXX";
    const char *d = mkdtemp(tmpl);
    return d ? d : "/tmp";
}

std::string read_string(hid_t obj, const char *name) {
    Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!a.ok()) return "<missing>";
    Handle t(H5Aget_type(a.get()), H5Tclose);
    std::string buf(H5Tget_size(t.get()) + 1, '\0');
    Handle m(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(m.get(), buf.size());
    if (H5Aread(a.get(), m.get(), buf.data()) < 0) return "<unreadable>";
    return buf.c_str();
}

std::vector<long long> read_ints(hid_t obj, const char *name) {
    Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!a.ok()) return {};
    Handle s(H5Aget_space(a.get()), H5Sclose);
    std::vector<long long> v(size_t(H5Sget_simple_extent_npoints(s.get())));
    if (!v.empty()) H5Aread(a.get(), H5T_NATIVE_LLONG, v.data());
    return v;
}

long long read_int(hid_t obj, const char *name) {
    auto v = read_ints(obj, name);
    return v.size() == 1 ? v[0] : -999;
}

class CaptureTest : public ::testing::Test {
protected:
    void TearDown() override { terse::capture_close(); }
};

TEST_F(CaptureTest, OffWhenNoPrefix) {
    terse::GlobalConfig g;
    ASSERT_EQ(terse::capture_open(g, 0, 1), TERSE_OK);
    EXPECT_FALSE(terse::capture_active());
    EXPECT_FALSE(terse::capture_wanted(0));
    EXPECT_STREQ(terse::capture_path(), "");
}

TEST_F(CaptureTest, WritesSampledCallsWithAttributes) {
    const std::string prefix = temp_dir() + "/cap";
    terse::GlobalConfig g;
    g.capture_prefix = prefix;
    g.capture_interval = 2;
    ASSERT_EQ(terse::capture_open(g, 3, 4), TERSE_OK) << terse::last_error();
    EXPECT_TRUE(terse::capture_active());
    const std::string path = prefix + ".rank3.h5";
    EXPECT_EQ(path, terse::capture_path());

    terse::CommConfig config;
    config.codec.name = "quantize";
    config.codec.params = {{"bits", "8"}};
    const std::string name = "MPI_COMM_WORLD";
    const std::vector<int> members = {0, 3, 5};
    terse::CaptureSite st;
    st.comm_name = name;
    st.rank = 1;
    st.size = 3;
    st.world_ranks = members;
    st.config = &config;
    st.ctx_id = 77;
    st.seq = 5;
    std::vector<float> f(1000);
    for (size_t i = 0; i < f.size(); ++i) f[i] = std::sin(0.01f * float(i)) * 3.0f;
    std::vector<double> d = {1.5, -2.25, 1e300, NAN};
    for (uint64_t call = 0; call < 5; ++call)
        ASSERT_EQ(terse::capture_record(st, f.data(), f.size(), TERSE_DTYPE_FLOAT32, call), TERSE_OK)
            << terse::last_error();
    ASSERT_EQ(terse::capture_record(st, d.data(), d.size(), TERSE_DTYPE_FLOAT64, 6, TERSE_OP_MAX), TERSE_OK)
        << terse::last_error();
    ASSERT_EQ(terse::capture_record(st, nullptr, 0, TERSE_DTYPE_FLOAT32, 8), TERSE_OK) << terse::last_error();
    // The same call index again (a new communicator reusing the name).
    ASSERT_EQ(terse::capture_record(st, f.data(), 10, TERSE_DTYPE_FLOAT32, 2), TERSE_OK);
    // bfloat16 and float16 keep their width and are readable as floats.
    std::vector<uint16_t> bf = {0x3f80, 0xc000, 0x0000};  // 1, -2, 0
    std::vector<uint16_t> hf = {0x3c00, 0xc000, 0x7c00};  // 1, -2, +inf
    ASSERT_EQ(terse::capture_record(st, bf.data(), bf.size(), TERSE_DTYPE_BFLOAT16, 10), TERSE_OK);
    ASSERT_EQ(terse::capture_record(st, hf.data(), hf.size(), TERSE_DTYPE_FLOAT16, 12), TERSE_OK);
    terse::capture_close();
    EXPECT_FALSE(terse::capture_active());

    Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(read_string(file.get(), "format"), "terse-capture");
    EXPECT_EQ(read_int(file.get(), "format_version"), 1);
    EXPECT_EQ(read_int(file.get(), "world_rank"), 3);
    EXPECT_EQ(read_int(file.get(), "world_size"), 4);
    EXPECT_EQ(read_int(file.get(), "capture_interval"), 2);

    const std::string group = "/calls/" + terse::h5::link_name(name);
    EXPECT_GT(H5Lexists(file.get(), (group + "/0").c_str(), H5P_DEFAULT), 0);
    EXPECT_EQ(H5Lexists(file.get(), (group + "/1").c_str(), H5P_DEFAULT), 0) << "call 1 is not sampled";
    EXPECT_GT(H5Lexists(file.get(), (group + "/2").c_str(), H5P_DEFAULT), 0);
    EXPECT_EQ(H5Lexists(file.get(), (group + "/3").c_str(), H5P_DEFAULT), 0);
    EXPECT_GT(H5Lexists(file.get(), (group + "/4").c_str(), H5P_DEFAULT), 0);
    EXPECT_GT(H5Lexists(file.get(), (group + "/2~1").c_str(), H5P_DEFAULT), 0);

    {
        Handle ds(H5Dopen2(file.get(), (group + "/4").c_str(), H5P_DEFAULT), H5Dclose);
        ASSERT_TRUE(ds.ok());
        EXPECT_EQ(read_string(ds.get(), "comm_name"), name);
        EXPECT_EQ(read_string(ds.get(), "datatype"), "float32");
        EXPECT_EQ(read_string(ds.get(), "op"), "sum");
        EXPECT_EQ(read_string(ds.get(), "codec"), "quantize:bits=8");
        EXPECT_EQ(read_string(ds.get(), "config"), config.canonical());
        EXPECT_EQ(read_int(ds.get(), "count"), 1000);
        EXPECT_EQ(read_int(ds.get(), "call_index"), 4);
        EXPECT_EQ(read_int(ds.get(), "rank"), 1);
        EXPECT_EQ(read_int(ds.get(), "comm_size"), 3);
        EXPECT_EQ(read_int(ds.get(), "world_rank"), 3);
        EXPECT_EQ(read_ints(ds.get(), "members"), (std::vector<long long>{0, 3, 5}));
        EXPECT_EQ(read_int(ds.get(), "ctx_id"), 77);
        EXPECT_EQ(read_int(ds.get(), "seq"), 5);
        std::vector<float> back(f.size());
        ASSERT_GE(H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()), 0);
        EXPECT_EQ(back, f);
    }
    {
        Handle ds(H5Dopen2(file.get(), (group + "/6").c_str(), H5P_DEFAULT), H5Dclose);
        ASSERT_TRUE(ds.ok());
        EXPECT_EQ(read_string(ds.get(), "datatype"), "float64");
        EXPECT_EQ(read_string(ds.get(), "op"), "max");
        std::vector<double> back(d.size());
        ASSERT_GE(H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()), 0);
        EXPECT_EQ(back[0], d[0]);
        EXPECT_EQ(back[2], d[2]);
        EXPECT_TRUE(std::isnan(back[3]));
    }
    {
        Handle ds(H5Dopen2(file.get(), (group + "/8").c_str(), H5P_DEFAULT), H5Dclose);
        ASSERT_TRUE(ds.ok()) << "an empty call is recorded too";
        EXPECT_EQ(read_int(ds.get(), "count"), 0);
    }
    for (const char *name : {"/10", "/12"}) {
        Handle ds(H5Dopen2(file.get(), (group + name).c_str(), H5P_DEFAULT), H5Dclose);
        ASSERT_TRUE(ds.ok());
        Handle t(H5Dget_type(ds.get()), H5Tclose);
        EXPECT_EQ(H5Tget_class(t.get()), H5T_FLOAT);
        EXPECT_EQ(H5Tget_size(t.get()), 2u);
        float back[3];
        ASSERT_GE(H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back), 0);
        EXPECT_EQ(back[0], 1.0f) << name;
        EXPECT_EQ(back[1], -2.0f) << name;
        terse_dtype_t dt;
        ASSERT_TRUE(terse::h5::dtype_of_h5_type(t.get(), &dt));
        EXPECT_EQ(dt, std::string(name) == "/10" ? TERSE_DTYPE_BFLOAT16 : TERSE_DTYPE_FLOAT16);
    }
    unlink(path.c_str());
}

TEST_F(CaptureTest, UnwritableDirectoryIsAnError) {
    terse::GlobalConfig g;
    g.capture_prefix = "/nonexistent/dir/cap";
    EXPECT_EQ(terse::capture_open(g, 0, 1), TERSE_ERR_IO);
    EXPECT_NE(std::string(terse::last_error()).find("/nonexistent/dir/cap.rank0.h5"), std::string::npos)
        << terse::last_error();
    EXPECT_FALSE(terse::capture_active());
}

TEST_F(CaptureTest, ZeroIntervalIsAnError) {
    terse::GlobalConfig g;
    g.capture_prefix = temp_dir() + "/cap";
    g.capture_interval = 0;
    EXPECT_EQ(terse::capture_open(g, 0, 1), TERSE_ERR_INVALID);
    EXPECT_NE(std::string(terse::last_error()).find("TERSE_CAPTURE_INTERVAL"), std::string::npos);
    EXPECT_FALSE(terse::capture_active());
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
