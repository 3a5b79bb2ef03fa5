// AtomicFile: the final name holds the old file or the complete new one, never a partial file;
// temporaries go on failure, on destruction without a commit, on a signal, and when a later run
// finds them left by a dead process.
#include <ibdkit/common/atomic_file.h>

#include "test_util.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

void Put(const fs::path& p, const std::string& text)
{
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << text;
}

std::string Get(const fs::path& p)
{
    const auto b = test::ReadFile(p);
    return std::string(b.begin(), b.end());
}

/// The pid of a process that has exited and been reaped.
pid_t DeadPid()
{
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
}

} // namespace

TEST(AtomicFile, CommitPublishesTheWholeFileAndNothingBefore)
{
    test::TempDir dir;
    const fs::path out = dir.path / "utxo.csv";
    Put(out, "old\n");
    AtomicFile f(out);
    EXPECT_EQ(f.Temp().parent_path(), out.parent_path());
    EXPECT_EQ(f.Temp().filename().string(), "utxo.csv.partial-" + std::to_string(::getpid()));
    Put(f.Temp(), "new 1\nnew 2\n");
    EXPECT_EQ(Get(out), "old\n") << "the final name keeps the previous file until the commit";
    auto err = f.Commit();
    ASSERT_FALSE(err) << err->message;
    EXPECT_TRUE(f.Committed());
    EXPECT_EQ(Get(out), "new 1\nnew 2\n");
    EXPECT_FALSE(fs::exists(f.Temp()));
}

TEST(AtomicFile, WithoutCommitTheTemporaryGoesAndTheOldFileStays)
{
    test::TempDir dir;
    const fs::path out = dir.path / "t.sqlite";
    Put(out, "previous");
    fs::path temp;
    {
        AtomicFile f(out);
        temp = f.Temp();
        Put(temp, "half a fi");
    }
    EXPECT_FALSE(fs::exists(temp));
    EXPECT_EQ(Get(out), "previous");
    {
        AtomicFile f(dir.path / "absent.csv");
        Put(f.Temp(), "x");
    }
    EXPECT_FALSE(fs::exists(dir.path / "absent.csv"));
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++files;
    EXPECT_EQ(files, 1u) << "only the previous file is left";
}

TEST(AtomicFile, AFailedRenameLeavesTheFinalNameAsItWas)
{
    test::TempDir dir;
    const fs::path out = dir.path / "taken";
    fs::create_directories(out / "inside"); // a non-empty directory cannot be renamed over
    AtomicFile f(out);
    Put(f.Temp(), "data");
    auto err = f.Commit();
    ASSERT_TRUE(err);
    EXPECT_NE(err->message.find("left as it was"), std::string::npos) << err->message;
    EXPECT_FALSE(f.Committed());
    EXPECT_FALSE(fs::exists(f.Temp()));
    EXPECT_TRUE(fs::is_directory(out / "inside"));
}

TEST(AtomicFile, ACommitWithoutATemporaryFails)
{
    test::TempDir dir;
    AtomicFile f(dir.path / "never-opened.csv");
    EXPECT_TRUE(f.Commit());
    EXPECT_FALSE(fs::exists(dir.path / "never-opened.csv"));
}

TEST(AtomicFile, TemporariesOfDeadProcessesAreRemovedOthersKept)
{
    test::TempDir dir;
    const fs::path out = dir.path / "snap.dat";
    const fs::path dead = dir.path / ("snap.dat.partial-" + std::to_string(DeadPid()));
    const fs::path alive = dir.path / ("snap.dat.partial-" + std::to_string(::getppid()));
    const fs::path other = dir.path / ("other.dat.partial-" + std::to_string(DeadPid()));
    const fs::path unrelated = dir.path / "snap.dat.partial-notapid";
    for (const auto& p : {dead, alive, other, unrelated}) Put(p, "x");
    AtomicFile f(out);
    EXPECT_FALSE(fs::exists(dead)) << "left by a process that is gone";
    EXPECT_TRUE(fs::exists(alive)) << "its writer may still be running";
    EXPECT_TRUE(fs::exists(other)) << "another final name's";
    EXPECT_TRUE(fs::exists(unrelated));
}

TEST(AtomicFile, ASignalHandlerRemovesUncommittedTemporariesAndSaysWhatIsLeft)
{
    test::TempDir dir;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    AtomicFile done(dir.path / "done.csv");
    Put(done.Temp(), "all\n");
    ASSERT_FALSE(done.Commit());
    AtomicFile f(dir.path / "export.csv");
    Put(f.Temp(), "par");
    EXPECT_EQ(AbandonAtomicFilesFromSignal(fds[1], "ibdkit: interrupted:"), 1);
    ::close(fds[1]);
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    ::close(fds[0]);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, std::size_t(n)), "ibdkit: interrupted: " + (dir.path / "export.csv").string() +
                                                   ": not written (any previous file there is unchanged)\n");
    EXPECT_FALSE(fs::exists(f.Temp()));
    EXPECT_EQ(Get(dir.path / "done.csv"), "all\n");
}

TEST(AtomicFile, ADeviceIsWrittenInPlaceAndNeverReplaced)
{
    // Regression: an export to /dev/full once renamed a regular file over the device.
    AtomicFile f("/dev/null");
    EXPECT_TRUE(f.Direct());
    EXPECT_EQ(f.Temp(), fs::path("/dev/null"));
    Put(f.Temp(), "discarded");
    EXPECT_FALSE(f.Commit());
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(AtomicFile, ASymlinkKeepsPointingAtTheNewFile)
{
    test::TempDir dir;
    Put(dir.path / "real.csv", "old");
    fs::create_symlink("real.csv", dir.path / "link.csv");
    AtomicFile f(dir.path / "link.csv");
    EXPECT_FALSE(f.Direct());
    Put(f.Temp(), "new");
    ASSERT_FALSE(f.Commit());
    EXPECT_TRUE(fs::is_symlink(dir.path / "link.csv"));
    EXPECT_EQ(Get(dir.path / "real.csv"), "new");
}
