//! How many of the six logs are written to: F2FS's `active_logs=2|4|6` mount option.
//!
//! The rest of the write path classifies every block by the six-log rules (the kernel's
//! `__get_segment_type_6`): directory data hot, file data warm (cold or hot by its
//! advise bits), direct nodes of directories hot, of files warm, indirect nodes cold.
//! With fewer active logs the segment manager folds those classes onto the logs in use,
//! as the kernel's `__get_segment_type_4` and `__get_segment_type_2` choose:
//!
//! | class      | 6 logs    | 4 logs    | 2 logs   |
//! |------------|-----------|-----------|----------|
//! | hot data   | hot data  | hot data  | hot data |
//! | warm data  | warm data | cold data | hot data |
//! | cold data  | cold data | cold data | hot data |
//! | hot node   | hot node  | cold node | hot node |
//! | warm node  | warm node | warm node | hot node |
//! | cold node  | cold node | cold node | hot node |
//!
//! With four logs the kernel sends every block of a non-directory to cold data, hot
//! files included; the hot-data class stands for directory data only then, so the
//! classifier of file data asks [`ActiveLogs::file_data_class`].
//!
//! The logs not in use keep their segments: the checkpoint still records all six (the
//! kernel does the same), and fsck.f2fs checks only that data sits in data segments and
//! nodes in node segments.

use super::{LogType, NR_LOGS};

/// The number of active logs. Six (every log) unless a mount option says otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ActiveLogs {
    /// Hot data and hot node only.
    Two,
    /// Hot and cold data, warm and cold node.
    Four,
    /// All six logs (the kernel's default).
    #[default]
    Six,
}

impl ActiveLogs {
    /// From the option's number; `None` for anything but 2, 4 or 6 (the kernel refuses
    /// those too).
    pub fn from_count(n: u32) -> Option<ActiveLogs> {
        match n {
            2 => Some(ActiveLogs::Two),
            4 => Some(ActiveLogs::Four),
            6 => Some(ActiveLogs::Six),
            _ => None,
        }
    }

    /// The option's number.
    pub fn count(self) -> u32 {
        match self {
            ActiveLogs::Two => 2,
            ActiveLogs::Four => 4,
            ActiveLogs::Six => 6,
        }
    }

    /// The log blocks of six-log class `class` are written to.
    pub fn log_for(self, class: LogType) -> LogType {
        use LogType::*;
        match (self, class) {
            (ActiveLogs::Six, c) => c,
            (ActiveLogs::Four, HotData) => HotData,
            (ActiveLogs::Four, WarmData | ColdData) => ColdData,
            (ActiveLogs::Four, WarmNode) => WarmNode,
            (ActiveLogs::Four, HotNode | ColdNode) => ColdNode,
            (ActiveLogs::Two, c) if c.is_node() => HotNode,
            (ActiveLogs::Two, _) => HotData,
        }
    }

    /// The logs written to, in `CURSEG_*` order.
    pub fn logs(self) -> Vec<LogType> {
        let mut logs: Vec<LogType> = LogType::ALL.iter().map(|&c| self.log_for(c)).collect();
        logs.sort();
        logs.dedup();
        logs
    }

    /// Blocks needed per class, added up per log written to.
    pub fn fold(self, per_class: &[u64; NR_LOGS]) -> [u64; NR_LOGS] {
        let mut per_log = [0u64; NR_LOGS];
        for (class, blocks) in LogType::ALL.iter().zip(per_class) {
            per_log[self.log_for(*class) as usize] += blocks;
        }
        per_log
    }

    /// The class of a regular file's data, from its hot and cold advise flags: cold
    /// wins; hot counts only with six logs (with four the kernel writes hot files to
    /// cold data like any file; with two everything is one data log).
    pub fn file_data_class(self, cold: bool, hot: bool) -> LogType {
        if cold {
            LogType::ColdData
        } else if hot && self == ActiveLogs::Six {
            LogType::HotData
        } else {
            LogType::WarmData
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LogType::*;

    #[test]
    fn counts_round_trip_and_others_are_refused() {
        for n in [2, 4, 6] {
            assert_eq!(ActiveLogs::from_count(n).unwrap().count(), n);
        }
        for n in [0, 1, 3, 5, 7, 8, 16] {
            assert_eq!(ActiveLogs::from_count(n), None);
        }
        assert_eq!(ActiveLogs::default(), ActiveLogs::Six);
    }

    #[test]
    fn classes_fold_as_the_kernel_chooses() {
        let six = LogType::ALL.map(|c| ActiveLogs::Six.log_for(c));
        assert_eq!(six, LogType::ALL);
        let four = LogType::ALL.map(|c| ActiveLogs::Four.log_for(c));
        assert_eq!(four, [HotData, ColdData, ColdData, ColdNode, WarmNode, ColdNode]);
        let two = LogType::ALL.map(|c| ActiveLogs::Two.log_for(c));
        assert_eq!(two, [HotData, HotData, HotData, HotNode, HotNode, HotNode]);
        assert_eq!(ActiveLogs::Two.logs(), [HotData, HotNode]);
        assert_eq!(ActiveLogs::Four.logs(), [HotData, ColdData, WarmNode, ColdNode]);
        assert_eq!(ActiveLogs::Six.logs(), LogType::ALL);
        // Data never lands in a node log, nor nodes in a data log.
        for logs in [ActiveLogs::Two, ActiveLogs::Four, ActiveLogs::Six] {
            for c in LogType::ALL {
                assert_eq!(logs.log_for(c).is_node(), c.is_node(), "{logs:?} {c:?}");
            }
        }
    }

    #[test]
    fn needs_add_up_per_log() {
        let need = [1, 2, 4, 8, 16, 32];
        assert_eq!(ActiveLogs::Six.fold(&need), need);
        assert_eq!(ActiveLogs::Four.fold(&need), [1, 0, 6, 0, 16, 40]);
        assert_eq!(ActiveLogs::Two.fold(&need), [7, 0, 0, 56, 0, 0]);
    }

    #[test]
    fn hot_files_are_hot_only_with_six_logs() {
        assert_eq!(ActiveLogs::Six.file_data_class(false, true), HotData);
        assert_eq!(ActiveLogs::Six.file_data_class(true, true), ColdData);
        assert_eq!(ActiveLogs::Six.file_data_class(false, false), WarmData);
        assert_eq!(
            ActiveLogs::Four.log_for(ActiveLogs::Four.file_data_class(false, true)),
            ColdData
        );
        assert_eq!(
            ActiveLogs::Two.log_for(ActiveLogs::Two.file_data_class(false, true)),
            HotData
        );
        assert_eq!(
            ActiveLogs::Two.log_for(ActiveLogs::Two.file_data_class(true, false)),
            HotData
        );
    }
}
