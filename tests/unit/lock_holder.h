// A child process holding an fcntl write lock on a file, as bitcoind holds its datadir's `.lock`
// and LevelDB its LOCK files: F_GETLK reports only other processes' locks, so the holder must be one.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace ibdkit::test {

/// Holds the lock (creating the file if missing) from construction until destruction.
struct LockHolder {
    pid_t pid{-1};
    explicit LockHolder(const std::filesystem::path& file)
    {
        int p[2];
        EXPECT_EQ(pipe(p), 0);
        pid = fork();
        if (pid == 0) {
            close(p[0]);
            const int fd = ::open(file.c_str(), O_RDWR | O_CREAT, 0644);
            struct flock fl{};
            fl.l_type = F_WRLCK;
            fl.l_whence = SEEK_SET;
            const char ok = (fd >= 0 && ::fcntl(fd, F_SETLK, &fl) == 0) ? 1 : 0;
            (void)!write(p[1], &ok, 1);
            pause();
            _exit(0);
        }
        close(p[1]);
        char ok = 0;
        EXPECT_EQ(read(p[0], &ok, 1), 1);
        EXPECT_EQ(ok, 1) << "the child could not lock " << file;
        close(p[0]);
    }
    LockHolder(const LockHolder&) = delete;
    LockHolder& operator=(const LockHolder&) = delete;
    ~LockHolder()
    {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
};

} // namespace ibdkit::test
