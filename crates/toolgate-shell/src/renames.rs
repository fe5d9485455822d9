//! Programs under another name: `hash -p /bin/rm x; x -rf ~`, `cp /usr/bin/rm ./x && ./x -rf
//! ~`, `ln -s /bin/rm ./safe && ./safe -rf /`, `install -m755 /bin/rm ./r`. What a name was
//! made to mean earlier in the same command is what runs when it is used, so the command is
//! analysed as that program (its `argv[0]` becomes the program's path).

use std::path::PathBuf;

use crate::exec::basename;
use crate::paths::resolve_word;
use crate::walk::Walker;
use crate::words::Field;

/// Directories whose files are installed programs: a copy or link of one of them is that
/// program under a new name.
const PROGRAM_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/opt/homebrew/bin",
    "/run/current-system/sw/bin",
];

/// What a name stands for after a rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Alias {
    /// A command name looked up through the hash table (`hash -p PATH NAME`).
    Name(String),
    /// A file path (`cp /bin/rm ./x` makes `./x` that program).
    Path(PathBuf),
}

/// Whether `word` is the path of an installed program.
pub(crate) fn installed_program(word: &str) -> bool {
    let dir = word.rsplit_once('/').map_or("", |(d, _)| d);
    PROGRAM_DIRS.contains(&dir)
}

impl Walker<'_> {
    /// Remembers what `hash -p`, `cp`, `ln`, `install` and `mv` make a name mean.
    pub(crate) fn note_renames(&mut self, prog: &str, argv: &[Field]) {
        match prog {
            "hash" => {
                // `hash -p PATH NAME…`
                let Some(p) = argv.iter().position(|a| a.text == "-p") else {
                    return;
                };
                let (Some(path), names) = (argv.get(p + 1), argv.get(p + 2..).unwrap_or(&[]))
                else {
                    return;
                };
                for n in names.iter().filter(|n| !n.dynamic) {
                    self.renamed
                        .push((Alias::Name(n.text.clone()), path.text.clone()));
                }
            }
            "cp" | "ln" | "install" | "mv" | "rsync" => {
                const VALUED: &[&str] = &[
                    "-m",
                    "--mode",
                    "-o",
                    "--owner",
                    "-g",
                    "--group",
                    "-S",
                    "--suffix",
                    "-t",
                    "--target-directory",
                    "-T",
                ];
                let ops = crate::classify::effects::operands(&argv[1..], VALUED);
                let [src, dst] = ops.as_slice() else {
                    return;
                };
                if src.dynamic || dst.dynamic || !installed_program(&src.text) {
                    return;
                }
                let home = self.ctx.home.clone();
                if let Some(target) = resolve_word(&dst.text, self.cwd.as_deref(), home.as_deref())
                    && !dst.text.ends_with('/')
                    && dst.text != "."
                {
                    self.renamed.push((Alias::Path(target), src.text.clone()));
                }
            }
            _ => {}
        }
    }

    /// The program a command word was renamed to earlier in the command, if any.
    pub(crate) fn renamed_program(&self, word: &str) -> Option<String> {
        if self.renamed.is_empty() {
            return None;
        }
        let path = word
            .contains('/')
            .then(|| resolve_word(word, self.cwd.as_deref(), self.ctx.home.as_deref()))
            .flatten();
        self.renamed.iter().rev().find_map(|(alias, program)| {
            let hit = match (alias, &path) {
                (Alias::Name(n), None) => n == word,
                (Alias::Path(p), Some(q)) => p == q,
                _ => false,
            };
            (hit && basename(program) != basename(word)).then(|| program.clone())
        })
    }
}
