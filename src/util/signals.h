// Graceful stop on SIGINT / SIGTERM: the first signal asks the trainer to finish its step, write a checkpoint
// and a snapshot, and exit; a second one exits at once (checkpoints are written atomically, so nothing on disk
// is ever half-written). SIGXFSZ is ignored, so a file-size limit is an error naming the file.
#pragma once

namespace poslab {

void install_stop_handlers();
// What the first signal prints, for a phase other than the training's steps (a string that lives for good, e.g. a
// literal); nullptr: the training's own message again.
void set_stop_message(const char* message);
bool stop_requested();
int stop_signal();  // the signal received, 0 if none

}  // namespace poslab
