// ipc_files: the files in /dev/shm that the CUDA driver makes for this process's interprocess
// events (cuda.shm.<uid>.<pid>.<n>, named with the pid of the driver's own pid namespace, which
// need not be the one this process's parent sees). A child's CUDA stream notes those that its own
// exports made; whoever watches (the child's main, which records them in its start-up segment for
// its proxy) hears of them at once, so that they can be removed however the child ends.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ag {

using ipc_files_observer = std::function<void(const std::vector<std::string>&)>;

// Who hears of every file noted from now on (with all noted so far); an empty function: nobody.
void observe_ipc_files(ipc_files_observer observer);

// The names ("cuda.shm....") of the driver's files this process maps now (/proc/self/maps).
std::vector<std::string> mapped_ipc_files();

// Notes files this process's own interprocess events made (those mapped after, not before).
void note_own_ipc_files(const std::vector<std::string>& before,
                        const std::vector<std::string>& after);

// Every file noted so far.
std::vector<std::string> own_ipc_files();

} // namespace ag
