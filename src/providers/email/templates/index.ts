export { escapeHtml, renderEmail, TEST_SUBJECT_PREFIX, type EmailContent, type RenderedEmail } from './layout.js';
export { cancelledEmail, completedEmail, declinedEmail, formatDeadline, invitationEmail, reminderEmail, type EnvelopeMail, type MailPerson, type SigningAction } from './signing.js';
export { signInLinkEmail, verificationCodeEmail } from './access.js';
export { senderCompletedEmail, senderDeclinedEmail, senderExpiredEmail, type SenderMail } from './sender.js';
export { automaticReminderEmail, formatDeadlineIn, type ReminderKind, type ReminderRecipient } from './reminders.js';
